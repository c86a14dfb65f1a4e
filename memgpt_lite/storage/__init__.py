"""The storage seam, in three tiers: protocols -> core -> backends.

`protocol.Storage` (composed of the small protocols of protocols/) is all
the rest of memgpt_lite knows of a database; `open.open_storage` opens one
by where it is. core/ implements `Storage` once for every SQL database (see
core/__init__.py), and each backend, sqlite/ (the default) and postgres/,
adds only what its database says differently. copy.py moves agents between
any two of them, through `Storage` alone.
"""
