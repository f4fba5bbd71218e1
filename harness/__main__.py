from harness.cli.entry import main

main()
