"""A module of the user's, written to a file by a test and imported from there, so that
tapeflow reads its functions' source as it reads a real program's."""
import importlib.util
import sys


def write_module(folder, name, text):
    """The module `name` made of `text`: written to `folder/<name>.py` and imported anew."""
    path = folder / f'{name}.py'
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
