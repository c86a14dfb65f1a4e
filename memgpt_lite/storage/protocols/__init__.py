"""The storage seam by concern: one small protocol per module, each a part
of `storage.protocol.Storage` (which composes them, and which callers
import). The rules every method keeps are written once, in protocol.py."""
