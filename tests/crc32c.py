"""CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) as io/crc32c.h computes it, for the
tests that check a results file's checksums and an evaluation manifest's fingerprints with
code of their own. Import it with tests/ on sys.path."""

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data: bytes) -> int:
    """The CRC-32C of `data`."""
    c = 0xFFFFFFFF
    for byte in data:
        c = _TABLE[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283
