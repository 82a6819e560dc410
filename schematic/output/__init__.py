"""Output: plans formatted into files (:mod:`~schematic.output.render`), the output directory
the tool owns (:mod:`~schematic.output.outdir`), the file-system steps that write it safely
(:mod:`~schematic.output.disk`) and how a file differs from what would be written
(:mod:`~schematic.output.drift`).
"""
