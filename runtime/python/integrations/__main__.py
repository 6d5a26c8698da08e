"""python -m <package>.integrations transformers-spec [FILE]

Copies the device spec of transformers' test suite
(transformers_device_spec.py) to FILE, by default <device>_device_spec.py in
the working directory, and prints how to run transformers' tests with it:
transformers imports the file by its name, from the working directory.
"""

import pathlib
import shutil
import sys

from . import DEVICE

USAGE = __doc__.strip().splitlines()[0]


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "transformers-spec" or len(argv) > 2:
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2
    target = pathlib.Path(argv[1] if len(argv) > 1 else f"{DEVICE}_device_spec.py")
    if target.suffix != ".py" or target.exists():
        print(f"error: {target}: " + ("exists; give another file" if target.exists()
              else "transformers imports a .py file"), file=sys.stderr)
        return 1
    shutil.copyfile(pathlib.Path(__file__).with_name("transformers_device_spec.py"), target)
    print(f"wrote {target}; in the directory that holds it, run transformers' tests "
          f"on the {DEVICE} device with\n"
          f"  TRANSFORMERS_TEST_DEVICE_SPEC={target.name} python -m pytest tests/...")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
