"""Reading the input files: hardware profiles and cluster files, as frozen values.

The first stage of the pipeline; planning (:mod:`schematic.plan.cluster`) imports it, never the
other way. One reader per input kind, one YAML typing rule for all of them:

- :mod:`~schematic.inputs.reading`: the typing rule, and problems reported as file:line and key;
- :mod:`~schematic.inputs.profile_values`, :mod:`~schematic.inputs.cluster_values`: the values a
  file becomes and the checks on values beyond their types;
- :mod:`~schematic.inputs.profiles`, :mod:`~schematic.inputs.cluster_file` (with
  :mod:`~schematic.inputs.media_options` for the keys both share): the readers and the loading;
- :mod:`~schematic.inputs.documents`: pydantic models for the JSON Schemas only, held to the
  readers by a test (defining them would cost `generate` more start-up than all its other work).
"""
