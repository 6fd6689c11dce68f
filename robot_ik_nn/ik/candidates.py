"""The network's candidates inside the compiled solver: whether the network can seed a target,
and in which order its heads' candidates are refined (policy.py step 2; the search of
several_answers.py).

Every head's candidate costs a forward kinematics to place its tool; the solver looks at them in
head order and refines the first that lands within CLOSE of the target, or else the closest, and
scores the rest only if that one fails. The network alone (``iterations = 0``) and the search
for several answers place every head first (:func:`ranked`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .kernel import clamp, residual, weighted
from .layout import NEEDS_ROT, ROT_W, USE_NET, parts
from .network_forward import net_forward


@njit(cache=True)
def applies(cfg, sizes, has_quat):
    """Whether the compiled network can seed this target: there is one, and it is not a pose
    network given a position alone (restarts solve those)."""
    return cfg[USE_NET] > 0 and sizes.shape[0] > 1 and (has_quat or cfg[NEEDS_ROT] == 0)


@njit(cache=True)
def next_best(scores):
    """The index of the lowest score, which is then used up (set to infinity)."""
    k = 0
    for h in range(1, scores.shape[0]):
        if scores[h] < scores[k]:
            k = h
    scores[k] = np.inf
    return k


@njit(cache=True)
def proposals(model, netw, pt, Rt, cur, has_cur, seed, has_seed, ws):
    """The network's candidates into ws[16]: ``seed`` where they were computed outside the
    kernel (``has_seed``), else the compiled network's; none of them placed yet (ws[17] NaN)."""
    _, _, meta, sizes = parts(model)
    if has_seed:
        ws[16][:, :] = seed
    else:
        net_forward(netw, sizes, meta, pt, Rt, cur, has_cur, ws[16], ws[13], ws[14])
    ws[17][:] = np.nan


@njit(cache=True)
def score_the_rest(model, pt, Rt, has_quat, q, ws):
    """Every candidate not placed yet (a NaN score in ws[17]) placed: scored by where its tool
    lands, the weighted error that LM minimises."""
    chain, cfg, _, _ = parts(model)
    netq, scores = ws[16], ws[17]
    for h in range(netq.shape[0]):
        if np.isnan(scores[h]):
            q[:] = netq[h]
            clamp(chain, q)
            _, pe, re = residual(chain, cfg, q, pt, Rt, has_quat, ws[4], ws[6], ws, False)
            scores[h] = weighted(pe, re, cfg[ROT_W])


@njit(cache=True)
def ranked(model, netw, pt, Rt, has_quat, cur, has_cur, seed, has_seed, q, ws):
    """The network's candidates into ws[16], ranked by where their tool lands (ws[17] scores)."""
    proposals(model, netw, pt, Rt, cur, has_cur, seed, has_seed, ws)
    score_the_rest(model, pt, Rt, has_quat, q, ws)


# A candidate whose tool lands this close (weighted error, m) is refined at once, without
# placing the other heads' tools: LM finishes it in two or three steps all the same, and each
# head looked at costs a forward kinematics. Against ranking all four heads first, on 10,000
# targets per arm: 7-15 % more solved per second (Niryo One, Panda, iiwa, InMoov), all solved;
# 2 mm and 10 mm did no better on the Niryo One, the InMoov arm and the iiwa.
CLOSE = 0.005


@njit(cache=True)
def first(model, netw, pt, Rt, has_quat, cur, has_cur, seed, has_seed, q, ws):
    """The network's candidates into ws[16]; into ``q`` the first, in head order, whose tool lands
    within CLOSE of the target, else the closest, with its residual and Jacobian in ws[4] and
    ws[6] (descend's start). Scores in ws[17]: infinite once refined, NaN for heads not looked
    at. Returns (cost, position error, rotation error)."""
    chain, cfg, _, _ = parts(model)
    netq, scores = ws[16], ws[17]
    proposals(model, netw, pt, Rt, cur, has_cur, seed, has_seed, ws)
    keep_q, keep_e, keep_J = ws[0], ws[5], ws[7]
    closest, best, bc, bpe, bre = -1, np.inf, np.inf, np.inf, np.inf
    for h in range(netq.shape[0]):
        q[:] = netq[h]
        clamp(chain, q)
        cost, pe, re = residual(chain, cfg, q, pt, Rt, has_quat, ws[4], ws[6], ws, True)
        scores[h] = weighted(pe, re, cfg[ROT_W])
        if scores[h] < CLOSE:
            scores[h] = np.inf  # used up
            return cost, pe, re
        if closest < 0 or scores[h] < best:
            closest, best, bc, bpe, bre = h, scores[h], cost, pe, re
            keep_q[:] = q
            keep_e[:] = ws[4]
            keep_J[:, :] = ws[6]
    scores[closest] = np.inf
    q[:] = keep_q
    ws[4][:] = keep_e
    ws[6][:, :] = keep_J
    return bc, bpe, bre


@njit(cache=True)
def following(model, pt, Rt, has_quat, q, ws):
    """The closest candidate not refined yet into ``q`` (the heads not placed yet scored now)."""
    score_the_rest(model, pt, Rt, has_quat, q, ws)
    q[:] = ws[16][next_best(ws[17])]
