"""Script text shared by the benches and tests that run a fabwiz command in a fresh process with
its app patched (headless, timed, or left at a chosen frame).

`PATCH_APP` installs a meta path finder that calls the script's own `patch(module)` once
`screens.app` has loaded, as the command imports it (not before: the command's start-up comes
first, as for a user). It is a plain finder, not `importlib.abc`, which would import
importlib.resources (~10 ms) into the timing.
"""

PATCH_APP = """
import importlib.machinery, sys

class _PatchApp:
    def find_spec(self, name, path, target=None):
        if name != "screens.app":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        real = spec.loader.exec_module
        def exec_module(module):
            real(module)
            patch(module)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _PatchApp())
"""
