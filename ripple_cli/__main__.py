from ripple_cli.cli.main import main

main()
