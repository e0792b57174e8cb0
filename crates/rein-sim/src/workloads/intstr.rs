//! `intstr.GetScaledValueFromIntOrPercent`: an int, or a percentage of a total rounded up or
//! down.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The value of `v` against `total`: the int itself, or `ceil`/`floor(percent × total / 100)`.
/// `None` for a string that is not `<int>%`.
pub(crate) fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Option<i32> {
    match v {
        IntOrString::Int(i) => Some(*i),
        IntOrString::String(s) => {
            let percent: i64 = s.strip_suffix('%')?.parse().ok()?;
            let product = percent * i64::from(total);
            let value = if round_up {
                -((-product).div_euclid(100))
            } else {
                product.div_euclid(100)
            };
            i32::try_from(value).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    #[test]
    fn percentages_round_as_kube_rounds_them() {
        assert_eq!(scaled_value(&s("25%"), 10, true), Some(3));
        assert_eq!(scaled_value(&s("25%"), 10, false), Some(2));
        assert_eq!(scaled_value(&s("25%"), 1, true), Some(1));
        assert_eq!(scaled_value(&s("25%"), 1, false), Some(0));
        assert_eq!(scaled_value(&s("100%"), 3, false), Some(3));
        assert_eq!(scaled_value(&IntOrString::Int(2), 10, true), Some(2));
        assert_eq!(scaled_value(&s("2"), 10, true), None);
        assert_eq!(scaled_value(&s("x%"), 10, true), None);
    }
}
