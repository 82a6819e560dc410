"""The causes triage weighs, one module per part of the path from boot to a GPU pod."""
