#!/usr/bin/env python3
"""Compares the passages of one of our index builds with the chunks of the reference's index
database for the same project: which chunk ids only one side has, and which chunks differ in
heading or text, classified (equal after stripping whitespace, or otherwise).

usage: scripts/compare_chunks.py REFERENCE_INDEX_SQLITE OUR_BUILD_DIR [--show 3]

REFERENCE_INDEX_SQLITE is the reference's `theurian-index-<id>.sqlite` under the project's
.theurian/state/ (scripts/agreement.py leaves one there); OUR_BUILD_DIR is one of our
`theurian-index-<id>` directories (layout 4, `passages.bin`). Not part of CI.
"""
import argparse
import sqlite3
import struct


def ours(build_dir):
    data = open(build_dir + "/passages.bin", "rb").read()
    if data[:8] != b"THRNPSG2":
        raise SystemExit("not a layout-4 passage table")
    count, labels_len = struct.unpack_from("<QQ", data, 8)
    header, record = 48, 52
    labels_at = header + count * record + count * 8
    texts_at = labels_at + labels_len
    out = {}
    for i in range(count):
        at = header + i * record
        label_start, text_start = struct.unpack_from("<QQ", data, at)
        lens = struct.unpack_from("<8I", data, at + 16)
        labels, offset = [], labels_at + label_start
        for n in lens[:7]:
            labels.append(data[offset:offset + n].decode("utf-8", "replace"))
            offset += n
        text = data[texts_at + text_start:texts_at + text_start + lens[7]].decode("utf-8", "replace")
        out[labels[0]] = (labels[6], text)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("build")
    ap.add_argument("--show", type=int, default=3)
    a = ap.parse_args()
    ref = sqlite3.connect(f"file:{a.reference}?mode=ro", uri=True)
    theirs = {r[0]: (r[1], r[2]) for r in ref.execute("SELECT chunk_id, heading, text FROM chunks")}
    mine = ours(a.build)
    print(f"chunks: reference {len(theirs)}, ours {len(mine)}; only reference "
          f"{len(set(theirs) - set(mine))}, only ours {len(set(mine) - set(theirs))}")
    kinds, shown = {}, 0
    for cid in sorted(set(theirs) & set(mine)):
        (rh, rt), (oh, ot) = theirs[cid], mine[cid]
        if (rh, rt) == (oh, ot):
            continue
        kind = "heading" if rh != oh else "text equal after strip" if rt == ot.strip() else "text"
        kinds[kind] = kinds.get(kind, 0) + 1
        if shown < a.show:
            shown += 1
            print(f"{cid} ({kind})\n  reference {rt[:90]!r}\n  ours      {ot[:90]!r}")
    print("differing chunks:", kinds or "none")


if __name__ == "__main__":
    main()
