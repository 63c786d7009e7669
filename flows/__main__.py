from flows.cli.app import main

main()
