"""Release and hardware facts, read from the package data: Talos releases and their drivers,
NVIDIA devices and the rules that pick extensions, the extension catalogue, Cozystack chart
targets and the boot media each platform takes. No planning here: the plan asks these.
"""
