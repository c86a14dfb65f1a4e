"""The settings layer: what can be set (flag, environment, config.toml,
default), resolved at the edges and handed down typed.

`resolve.py` is the only module that reads the environment or config.toml;
the command line, the server and `Agent` call it. What they hand down to
the layers below is plain and typed: `values.py` (`Settings` and its parts),
`folders.py` (how errors name a folder), `endpoint.py` (a model endpoint's
URL, key and timeout, checked). `effective.py` holds the pydantic models of
config.toml and of each setting with its source.
"""
