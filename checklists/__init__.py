"""The bundled pytest-vlcheck checklists (YAML files in this directory).

Installed as ``pytest_vlcheck.checklists`` so that ``pytest --pyargs pytest_vlcheck.checklists``
finds them in an installed wheel;
``pytest_vlcheck.checklist.bundled.bundled_checklists_dir()`` returns this directory wherever
the package is installed.
"""
