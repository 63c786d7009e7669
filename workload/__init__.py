"""What is sent and how it is timed: prompt synthesis, the streaming client process, the
request metrics and the request journal."""
