"""The bundled generative checklists (YAML files in this directory): the capabilities of the
CLIP suite (``checklists/``) asked of a generative model as questions with exact answers.

Installed as ``pytest_vlcheck.checklists_generative`` so that ``pytest --pyargs
pytest_vlcheck.checklists_generative --vl-model=vqa:...`` finds them in an installed wheel;
``pytest_vlcheck.checklist.bundled.bundled_checklists_dir("checklists_generative")`` returns
this directory wherever the package is installed.
"""
