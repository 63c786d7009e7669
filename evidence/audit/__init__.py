"""faceoff audit: re-verifying a bundle from its native artifacts."""
