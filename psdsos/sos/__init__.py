"""Kernel SoS objects: the PSD-valued model, the evaluation map, the CVXPY primitives and
the box certificate of a kernel constraint (the objectives are in :mod:`psdsos.problems`)."""

from psdsos.sos._box_certify import (
    BoxCertificate,
    certify_box,
    kernel_constraint_certificate,
)
from psdsos.sos._maps import (
    hadamard_square_factor,
    sos_adjoint,
    sos_evaluate,
    sos_operator_norm_sq,
)
from psdsos.sos._model import PSDModel, load_npz, project_psd, save_npz
from psdsos.sos._primitive import SoSBlock, sos_constraints
from psdsos.sos._representer import representer_radius
from psdsos.sos._shape_primitive import ShapeConstraintBlock, kernel_shape_constraint

__all__ = [
    "PSDModel",
    "SoSBlock",
    "sos_constraints",
    "sos_evaluate",
    "sos_adjoint",
    "sos_operator_norm_sq",
    "hadamard_square_factor",
    "project_psd",
    "save_npz",
    "load_npz",
    "BoxCertificate",
    "certify_box",
    "kernel_constraint_certificate",
    "kernel_shape_constraint",
    "ShapeConstraintBlock",
    "representer_radius",
]
