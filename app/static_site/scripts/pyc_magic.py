"""Prints the bytecode magic number of this Python if it is 3.12, else False."""

import importlib.util
import sys

print(sys.version_info[:2] == (3, 12) and importlib.util.MAGIC_NUMBER.hex())
