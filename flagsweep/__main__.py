from flagsweep.cli import main

main()
