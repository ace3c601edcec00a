"""The errors muir.torch raises for a parameter or a param group (re-
exported as muir.torch.ParameterError, NonFiniteGradientError and
ParamGroupError)."""
import math


class ParameterError(ValueError):
    """A parameter (or its gradient or state) muir cannot run; `name` is
    the parameter's name. Raised before anything is updated."""
    __module__ = "muir.torch"     # its public name

    def __init__(self, name, message):
        super().__init__("muir.torch.Muon: parameter '%s': %s"
                         % (name, message))
        self.name = name


class NonFiniteGradientError(ParameterError):
    """A gradient holding a NaN or an infinity (check_finite): `name` is
    the parameter's name, `element` the flat index of the first such
    element, `value` its value. Raised before anything is updated."""
    __module__ = "muir.torch"     # its public name

    def __init__(self, name, element, numel, value):
        super().__init__(name, "its gradient holds %s at element %d (of "
                         "%d); stopped before the step, nothing updated "
                         "(check_finite=False turns this check off)"
                         % (_float_text(value), element, numel))
        self.element = element
        self.value = value


class ParamGroupError(ValueError):
    """A param_groups value out of range, a key the step does not read, or
    a structural key changed; `group` is the group's index and `key` the
    key (both None when the number of groups changed). Raised before
    anything is updated."""
    __module__ = "muir.torch"     # its public name

    def __init__(self, group, kind, key, message):
        super().__init__("muir.torch.Muon: param_groups%s %s" % (
            "" if group is None else "[%d] (%s)" % (group, kind), message))
        self.group = group
        self.key = key


def _float_text(v):
    return "nan" if v != v else "inf" if v == math.inf else \
        "-inf" if v == -math.inf else repr(v)
