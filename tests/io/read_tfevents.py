#!/usr/bin/env python3
"""Independent TensorBoard event-file reader for the yolo11 tests (tests/io/test_tensorboard.cpp).

    read_tfevents.py EVENT_FILE PROTO OUT_JSON

Walks the TFRecord framing by hand (uint64 length, masked CRC-32C of the length bytes, data, masked CRC-32C of the
data), checking both CRCs with its own CRC-32C (bitwise, Castagnoli), and decodes each record as an `Event` with
Python's protobuf package, from PROTO compiled here by `protoc --python_out`. Writes
    {"records": N, "events": [{"wall_time": .., "step": .., "file_version": ".."} |
                              {"wall_time": .., "step": .., "values": [{"tag": .., "simple_value": ..}]}]}
Exits 1 with a message on the first framing, CRC or decode error.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def fail(msg: str) -> None:
    print("read_tfevents: " + msg, file=sys.stderr)
    sys.exit(1)


def main() -> None:
    if len(sys.argv) != 4:
        fail("usage: read_tfevents.py EVENT_FILE PROTO OUT_JSON")
    path, proto, out = sys.argv[1:]
    assert crc32c(b"123456789") == 0xE3069283, "CRC-32C self-check"
    gen = tempfile.mkdtemp(prefix="tfevents_pb_")
    try:
        protoc = shutil.which("protoc") or "protoc"
        subprocess.run([protoc, "--python_out=" + gen, "-I", os.path.dirname(os.path.abspath(proto)),
                        os.path.abspath(proto)], check=True)
        sys.path.insert(0, gen)
        import tensorboard_pb2 as pb  # noqa: E402  (generated above)

        data = open(path, "rb").read()
        pos, events = 0, []
        while pos < len(data):
            if len(data) - pos < 12:
                fail(f"truncated record header at byte {pos}")
            header = data[pos:pos + 8]
            (length,) = struct.unpack("<Q", header)
            (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
            if masked(crc32c(header)) != length_crc:
                fail(f"length crc mismatch at byte {pos}")
            if len(data) - pos < 16 + length:
                fail(f"truncated record at byte {pos} (length {length})")
            body = data[pos + 12:pos + 12 + length]
            (data_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
            if masked(crc32c(body)) != data_crc:
                fail(f"data crc mismatch in record {len(events)} at byte {pos}")
            ev = pb.Event()
            ev.ParseFromString(body)
            rec = {"wall_time": ev.wall_time, "step": ev.step}
            what = ev.WhichOneof("what")
            if what == "file_version":
                rec["file_version"] = ev.file_version
            elif what == "summary":
                rec["values"] = [{"tag": v.tag, "simple_value": v.simple_value} for v in ev.summary.value]
            else:
                fail(f"record {len(events)} holds neither file_version nor summary")
            events.append(rec)
            pos += 16 + length
        with open(out, "w") as f:
            json.dump({"records": len(events), "events": events}, f)
    finally:
        shutil.rmtree(gen, ignore_errors=True)


if __name__ == "__main__":
    main()
