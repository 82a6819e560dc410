from schematic.cli import main

main()
