"""CPU references of the example's custom operators, named by `reference:`
in specs/operators.yaml; the conformance suite compares the device with
them. Written by hand: this file is the backend's own."""


def scaled_add(self, other, alpha=1.0):
    return self + alpha * other
