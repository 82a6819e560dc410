"""Reading the input files: hardware profiles and cluster files, as frozen values.

The first stage of the pipeline; planning (:mod:`schematic.cluster`) imports it, never the
other way. Inside, the arrows point one way too:

- :mod:`~schematic.inputs.profile_values`, :mod:`~schematic.inputs.cluster_values`: the values a
  file becomes and the checks beyond types, shared by both readers;
- :mod:`~schematic.inputs.documents`: the pydantic models, the authority on what a file may
  say (error messages, JSON Schemas); they build those values with those checks;
- :mod:`~schematic.inputs.plain`, :mod:`~schematic.inputs.profiles`,
  :mod:`~schematic.inputs.cluster_file`: the fast readers for the usual file shape, and the
  loading; what they do not read themselves they hand to the models, imported only then.

Defining pydantic models costs `generate` more start-up time than all its other work, which is
why the usual shape is read without them (a property test checks both ways agree).
"""
