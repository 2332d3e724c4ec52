"""Print the passages that the `main` question slice is written from (the chapter's method).

    python data/sample_passages.py [--corpus data/corpus] [--per-track N] [--seed N] [--out FILE]

Writes one JSON object per passage (track, doc, start, end, text). Rerunning with the same
corpus and seed gives the same passages. ``--per-track`` and ``--seed`` default to the defaults
of ``workbench.per_track`` and ``workbench.seed`` (``rag_ablation.core.config.WorkbenchConfig``),
so the script samples what the workbench's write mode does out of the box.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rag_ablation.core.config import WorkbenchConfig, field_defaults  # noqa: E402
from rag_ablation.data.passages import sample_passages  # noqa: E402


def main() -> None:
    defaults = field_defaults(WorkbenchConfig)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    ap.add_argument("--per-track", type=int, default=defaults["per_track"], help="default: %(default)s")
    ap.add_argument("--seed", type=int, default=defaults["seed"], help="default: %(default)s")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    passages, skipped = sample_passages(args.corpus, per_track=args.per_track, seed=args.seed)
    lines = [
        json.dumps({"track": p.track, "doc": p.doc, "start": p.start, "end": p.end, "text": p.text},
                   ensure_ascii=False)
        for p in passages
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    print(f"sampled {len(passages)} passages; skipped per track: {skipped}", file=sys.stderr)


if __name__ == "__main__":
    main()
