"""The handbook's reference inference stack.

The handbook's modules are flat (`from prefix_cache import PrefixCachingBlockPool`), because that is
how students import them in their solutions and how the judge mounts them in a sandbox. Importing
this package puts its folder on `sys.path`, so project code does `import reference` once and then
uses the flat names; each file is then loaded as exactly one module object.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)

if HERE not in sys.path:
    sys.path.insert(0, HERE)


def cache_root() -> str:
    """Where generated artefacts (tiny checkpoints, the tokenizer) are kept: `<repo>/.cache`,
    or `$KVPRACTICE_CACHE` when set."""
    return os.environ.get("KVPRACTICE_CACHE") or os.path.join(REPO_ROOT, ".cache")
