"""The API coverage table: glasstorch against PyTorch, name by name (``docs/api/coverage.md``).

* :mod:`.namespaces`: the namespaces compared and how a name's kind and arguments are read;
* :mod:`.snapshot`: PyTorch's side, read once into ``data/pytorch_api.json``;
* :mod:`.usage`: which names a corpus of public programs uses (``data/usage_counts.json``);
* :mod:`.scope`: what is left out on purpose, and why;
* :mod:`.compare`: the statuses (supported, partial, missing, out of scope);
* :mod:`.page`: the docs page, written by ``docs/conf.py`` on every build.

``python -m glasstorch.coverage --help`` lists the commands.
"""
