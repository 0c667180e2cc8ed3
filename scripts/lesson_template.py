# %% [markdown]
# # NN · Title of the lesson
#
# BADGES (replace with the output of `python -c "import tfs; print(tfs.badges('NN_name.ipynb'))"`)
#
# One paragraph: what the lesson is about.
#
# **What you'll do**
#
# 1. ...
# 2. ...

# %%
# Set-up: on Colab or Kaggle, install the course's helper package first.
import importlib.util
import subprocess
import sys

TFS = "git+https://github.com/xmarva/transformers-from-scratch@main"
if importlib.util.find_spec("tfs") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", TFS])

from tfs import env
from tfs.viz import use_course_style

env.quiet()  # no library warnings, no progress bars
print(env.about())  # which tfs this lesson uses, and where it comes from

# %% tags=["parameters"]
# every check in this lesson holds for any seed: make course PARAMS="SEED=7"
SEED = 42

# %%
env.seed_everything(SEED)
COLORS = use_course_style()
DEVICE = env.device()
print("device:", DEVICE)

# %% [markdown]
# ## 1. First section
