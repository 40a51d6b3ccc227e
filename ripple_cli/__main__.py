from ripple_cli.cli.entry import main

main()
