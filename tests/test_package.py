"""The package around the code: its version, defined once, and its licence."""
import pathlib
import re
import sys

import tapeflow

ROOT = pathlib.Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:                                   # pragma: no cover
    import tomli as tomllib


def _pyproject():
    return tomllib.loads((ROOT / 'pyproject.toml').read_text())


def test_version_is_defined_once_and_pyproject_reads_it():
    assert re.fullmatch(r'\d+\.\d+\.\d+([.-]?\w+)?', tapeflow.__version__)
    project = _pyproject()
    assert 'version' not in project['project'] and 'version' in project['project']['dynamic']
    attr = project['tool']['setuptools']['dynamic']['version']['attr']
    module, _, name = attr.rpartition('.')
    assert getattr(__import__(module, fromlist=[name]), name) == tapeflow.__version__


def test_the_r_package_has_the_same_version():
    description = (ROOT / 'r' / 'tapeflow' / 'DESCRIPTION').read_text()
    assert re.search(r'^Version: (.+)$', description, re.M).group(1) == tapeflow.__version__


def test_mit_licence_at_the_root_and_in_the_metadata():
    text = (ROOT / 'LICENSE').read_text()
    assert text.startswith('MIT License\n\nCopyright (c) 2026 The tapeflow authors\n')
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
    project = _pyproject()['project']
    assert project['license'] == 'MIT' and project['license-files'] == ['LICENSE']


def test_the_r_package_declares_mit_with_its_two_line_licence_file():
    description = (ROOT / 'r' / 'tapeflow' / 'DESCRIPTION').read_text()
    assert re.search(r'^License: MIT \+ file LICENSE$', description, re.M)
    assert (ROOT / 'r' / 'tapeflow' / 'LICENSE').read_text() == \
        'YEAR: 2026\nCOPYRIGHT HOLDER: The tapeflow authors\n'
