# SPDX-License-Identifier: LGPL-2.1-or-later
# A "package" served by the local mirror: the only network destination allowed.
def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0
