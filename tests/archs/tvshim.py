"""A stand-in for torchvision, for the tests only: timm imports it at import time.

torchvision is not installed here (its PyPI wheels are CUDA builds whose ops do not load on the
CPU torch). timm's model definitions do not need it; its data pipeline does.  Importing this
module registers an import hook that gives ``torchvision.*`` empty modules whose attributes are
placeholder classes (calling one raises).  Used by tests/archs only; never by drifttui.
"""
import sys, importlib.abc, importlib.machinery, types

class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return f"{cls.__name__}.{name}"

class _Missing(metaclass=_Meta):
    def __init__(self, *a, **k):
        raise RuntimeError("torchvision is not installed (drifttui's test shim)")

class _Mod(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        cls = type(name, (_Missing,), {})
        setattr(self, name, cls)
        return cls

class F(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == 'torchvision' or name.startswith('torchvision.'):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        m = _Mod(spec.name); m.__path__ = []; return m
    def exec_module(self, m):
        pass
sys.meta_path.insert(0, F())
