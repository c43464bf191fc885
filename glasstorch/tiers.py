"""``python -m glasstorch.tiers``: print the tiers that implement the whole contract.

``make test`` runs the conformance suite once for each name printed.
"""

from glasstorch._tier import complete_tiers

if __name__ == "__main__":
    for name in complete_tiers():
        print(name)
