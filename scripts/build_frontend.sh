#!/usr/bin/env bash
# Builds what the web pages serve; run once after a clone and after front-end changes.
#   web/static/dist/     the page scripts and stylesheet (esbuild bundle of web/frontend/src/)
#   web/static/vendor/   Pyodide (from the npm package) and the wheels the page loads into it,
#                        and a memory snapshot of the page's Python once pytest is imported
# Needs the npm registry and PyPI (or their mirrors) the first time; nothing is fetched at run
# time. Idempotent: npm ci reuses its cache, wheels already present with the right hash stay.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
front="$repo/web/frontend"
static="$repo/web/static"
vendor="$static/vendor"
python="${PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then python="$repo/.venv/bin/python"; else python="$(command -v python3)"; fi
fi

command -v npm >/dev/null || { echo "npm is required (Node >= 18)" >&2; exit 1; }

echo "== npm ci (exact versions from web/frontend/package-lock.json)"
cd "$front"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

echo "== the judge's vocabulary -> web/frontend/src/vocabulary.js"
(cd "$repo" && "$python" -m judge.judging.vocabulary > "$front/src/vocabulary.js.tmp")
mv "$front/src/vocabulary.js.tmp" "$front/src/vocabulary.js"

echo "== the judge's browser-safe rooms -> web/frontend/page-files.json (what build.mjs bundles)"
(cd "$repo" && "$python" -c 'import json; from judge.browser.page_run import page_files; print(json.dumps(page_files()))') > "$front/page-files.json"

echo "== esbuild bundle -> web/static/dist/"
rm -rf "$static/dist"
node build.mjs

echo "== Pyodide core -> web/static/vendor/pyodide/"
mkdir -p "$vendor/pyodide"
for f in pyodide.mjs pyodide.asm.mjs pyodide.asm.wasm python_stdlib.zip pyodide-lock.json package.json; do
  cp -p "node_modules/pyodide/$f" "$vendor/pyodide/$f"
done
pyodide_version="$(node -p 'require("./node_modules/pyodide/package.json").version')"
# Pre-compressed copies the server sends to browsers that accept gzip (the wasm: 9.6 -> 3.6 MB),
# so no request pays for compressing them.
"$python" - "$vendor/pyodide/pyodide.asm.wasm" "$vendor/pyodide/pyodide.asm.mjs" <<'PY'
import gzip, shutil, sys
for name in sys.argv[1:]:
    with open(name, "rb") as src, gzip.GzipFile(name + ".gz", "wb", compresslevel=9, mtime=0) as dst:
        shutil.copyfileobj(src, dst)
PY

echo "== browser wheels -> web/static/vendor/wheels/ (pip download, hashes checked)"
mkdir -p "$vendor/wheels"
"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.14 \
  --platform any --implementation py --require-hashes -r "$front/browser-wheels.txt" \
  -d "$vendor/wheels"

"$python" - "$front/browser-wheels.txt" "$vendor" "$pyodide_version" <<'PY'
import json, re, sys
from pathlib import Path
reqs, vendor, version = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
names = [m.group(1) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==([^\s]+)", reqs.read_text(), re.M)]
wheels = {p.name.split("-")[0].lower().replace("_", "-"): p.name
          for p in (vendor / "wheels").glob("*.whl")}
pins = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s]+)", reqs.read_text(), re.M))
def pick(name):
    w = wheels.get(name.lower())
    if not w or f"-{pins[name]}-" not in w:
        sys.exit(f"wheel for {name}=={pins[name]} missing in {vendor / 'wheels'}")
    return w
runner = [pick(n) for n in ("pytest", "pluggy", "iniconfig", "packaging")]
editor = [pick(n) for n in ("parso", "jedi")]
(vendor / "manifest.json").write_text(json.dumps(
    {"pyodide_version": version, "wheels": runner, "editor_wheels": editor}, indent=1) + "\n")
print(f"manifest: Pyodide {version}, {len(runner)} runner wheels, {len(editor)} editor wheels")
PY

echo "== the page's Python, set up as a first visit would, snapshotted -> web/static/vendor/snapshot/"
# A first visit restores it instead of starting Python and importing pytest (issue 19).
(cd "$front" && node node_modules/.kvp/make_snapshot.mjs "$vendor")
echo "Front end built. Start the platform with: python -m web.cli serve"
