//! The values one pass of a user's script binds: its `\set` expressions evaluated with
//! dbsweep's counter-based randomness, so they are a pure function of (seed, sequence
//! number) and every system and run sees the same parameters.
//!
//! Owns pgbench's arithmetic and random functions as pgbench defines them (`random`:
//! uniform; `random_exponential`: pgbench's truncated exponential; `random_zipfian`:
//! pgbench's rejection sampler, `s` in [1.001, 1000]; doubles coerced to integers by
//! rounding where an integer is needed). Must not parse scripts or run them.

use crate::base::rng::Stream;
use crate::base::script::{BinaryOp, Expr, Function, Script, ScriptValue};

/// Draws of one `\set` beyond which a zipfian rejection loop gives up (never reached for
/// `s` in pgbench's range; a guard against a loop without end).
const MAX_DRAWS: u64 = 1 << 20;

/// The values of every variable (by slot) for the pass with sequence number `seq`;
/// `scale` is the data set's scale. An error names the `\set` line.
pub fn values(script: &Script, scale: f64, stream: &Stream, seq: u64) -> Result<Vec<ScriptValue>, String> {
    let mut values = vec![ScriptValue::Int(0); script.variables.len()];
    values[0] = if scale.fract() == 0.0 { ScriptValue::Int(scale as i64) } else { ScriptValue::Float(scale) };
    for (index, command) in script.commands.iter().enumerate() {
        if let crate::base::script::Command::Set { slot, expr, line } = command {
            let mut draws = Draws { stream, seq, lane: (index as u64) << 32 };
            values[*slot] = eval(expr, &values, &mut draws).map_err(|e| format!("{} line {line}: {e}", script.name))?;
        }
    }
    Ok(values)
}

/// The random numbers of one `\set` of one pass.
struct Draws<'a> {
    stream: &'a Stream,
    seq: u64,
    lane: u64,
}

impl Draws<'_> {
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.lane += 1;
        self.stream.unit(self.seq, self.lane)
    }

    /// Uniform in [lo, hi].
    fn between(&mut self, lo: i64, hi: i64) -> i64 {
        self.lane += 1;
        let span = (hi as i128 - lo as i128 + 1) as u128;
        let draw = (self.stream.u64(self.seq, self.lane) as u128 * span) >> 64;
        (lo as i128 + draw as i128) as i64
    }
}

fn eval(expr: &Expr, values: &[ScriptValue], draws: &mut Draws) -> Result<ScriptValue, String> {
    use ScriptValue::{Float, Int};
    Ok(match expr {
        Expr::Int(n) => Int(*n),
        Expr::Float(x) => Float(*x),
        Expr::Variable(slot) => values[*slot].clone(),
        Expr::Negate(e) => match eval(e, values, draws)? {
            Int(n) => Int(n.checked_neg().ok_or("bigint out of range")?),
            Float(x) => Float(-x),
            ScriptValue::Text(_) => return Err("- takes numbers".into()),
        },
        Expr::Binary(op, a, b) => binary(*op, eval(a, values, draws)?, eval(b, values, draws)?)?,
        Expr::Call(function, args) => {
            let args = args.iter().map(|a| eval(a, values, draws)).collect::<Result<Vec<_>, _>>()?;
            call(*function, &args, draws)?
        }
    })
}

fn as_float(v: &ScriptValue) -> f64 {
    match v {
        ScriptValue::Int(n) => *n as f64,
        ScriptValue::Float(x) => *x,
        ScriptValue::Text(_) => f64::NAN,
    }
}

/// An integer argument: doubles are rounded, as pgbench coerces them.
fn as_int(v: &ScriptValue) -> Result<i64, String> {
    match *v {
        ScriptValue::Int(n) => Ok(n),
        ScriptValue::Float(x) if x.is_finite() && x.abs() < 9.2e18 => Ok(x.round_ties_even() as i64),
        ScriptValue::Float(x) => Err(format!("double {x} out of range for an integer")),
        ScriptValue::Text(_) => Err("text where a number is needed".into()),
    }
}

fn binary(op: BinaryOp, a: ScriptValue, b: ScriptValue) -> Result<ScriptValue, String> {
    use ScriptValue::{Float, Int};
    let overflow = || "bigint out of range".to_string();
    Ok(match (a, b) {
        (Int(x), Int(y)) => Int(match op {
            BinaryOp::Add => x.checked_add(y).ok_or_else(overflow)?,
            BinaryOp::Subtract => x.checked_sub(y).ok_or_else(overflow)?,
            BinaryOp::Multiply => x.checked_mul(y).ok_or_else(overflow)?,
            BinaryOp::Divide if y == 0 => return Err("division by zero".into()),
            BinaryOp::Divide => x.checked_div(y).ok_or_else(overflow)?,
            BinaryOp::Modulo if y == 0 => return Err("division by zero".into()),
            BinaryOp::Modulo => x.checked_rem(y).unwrap_or(0),
        }),
        (ScriptValue::Text(_), _) | (_, ScriptValue::Text(_)) => return Err("arithmetic takes numbers".into()),
        (a, b) => {
            let (x, y) = (as_float(&a), as_float(&b));
            Float(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Subtract => x - y,
                BinaryOp::Multiply => x * y,
                BinaryOp::Divide if y == 0.0 => return Err("division by zero".into()),
                BinaryOp::Divide => x / y,
                BinaryOp::Modulo => return Err("% takes integers".into()),
            })
        }
    })
}

fn call(function: Function, args: &[ScriptValue], draws: &mut Draws) -> Result<ScriptValue, String> {
    use ScriptValue::{Float, Int};
    let range = |name: &str| -> Result<(i64, i64), String> {
        let (lo, hi) = (as_int(&args[0])?, as_int(&args[1])?);
        if hi < lo {
            return Err(format!("empty range given to {name}({lo}, {hi})"));
        }
        if (hi as i128 - lo as i128) >= i64::MAX as i128 {
            return Err(format!("{name}({lo}, {hi}): range too large"));
        }
        Ok((lo, hi))
    };
    Ok(match function {
        Function::Random => {
            let (lo, hi) = range("random")?;
            Int(draws.between(lo, hi))
        }
        Function::RandomExponential => {
            let (lo, hi) = range("random_exponential")?;
            let parameter = as_float(&args[2]);
            if parameter.is_nan() || parameter <= 0.0 {
                return Err(format!("random_exponential: parameter {parameter} must be greater than 0"));
            }
            Int(exponential(lo, hi, parameter, draws))
        }
        Function::RandomZipfian => {
            let (lo, hi) = range("random_zipfian")?;
            let s = as_float(&args[2]);
            if !(1.001..=1000.0).contains(&s) {
                return Err(format!("random_zipfian: parameter {s} must be in [1.001, 1000]"));
            }
            Int(lo + zipfian(hi - lo + 1, s, draws)? - 1)
        }
        Function::Abs => match args[0] {
            Int(n) => Int(n.checked_abs().ok_or("bigint out of range")?),
            Float(x) => Float(x.abs()),
            ScriptValue::Text(_) => return Err("abs() takes a number".into()),
        },
        Function::Least | Function::Greatest => {
            let pick_greater = function == Function::Greatest;
            let mut best = &args[0];
            for v in &args[1..] {
                let greater = as_float(v) > as_float(best);
                if greater == pick_greater && as_float(v) != as_float(best) {
                    best = v;
                }
            }
            if args.iter().any(|v| matches!(v, Float(_))) { Float(as_float(best)) } else { best.clone() }
        }
        Function::Int => Int(as_int(&args[0]).or_else(|_| match args[0] {
            Float(x) if x.is_finite() => Ok(x.trunc() as i64),
            _ => Err("int(): not a finite number".to_string()),
        })?),
        Function::Double => Float(as_float(&args[0])),
    })
}

/// pgbench's `getExponentialRand`: `lo + (hi - lo + 1) * -ln(cut + (1 - cut) * u) / p`,
/// `cut = e^-p`, `u` in (0, 1].
fn exponential(lo: i64, hi: i64, parameter: f64, draws: &mut Draws) -> i64 {
    let cut = (-parameter).exp();
    let uniform = 1.0 - draws.unit();
    let rand = -(cut + (1.0 - cut) * uniform).ln() / parameter;
    let offset = ((hi as f64 - lo as f64 + 1.0) * rand) as i64;
    lo + offset.clamp(0, hi - lo)
}

/// pgbench's `computeIterativeZipfian` (Devroye's rejection sampler): a value in [1, n].
fn zipfian(n: i64, s: f64, draws: &mut Draws) -> Result<i64, String> {
    let b = 2f64.powf(s - 1.0);
    for _ in 0..MAX_DRAWS {
        let u = 1.0 - draws.unit();
        let v = draws.unit();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            return Ok(x as i64);
        }
    }
    Err(format!("random_zipfian: no value drawn in {MAX_DRAWS} tries"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::script::parse;

    fn one(text: &str, scale: f64, seq: u64) -> Result<Vec<ScriptValue>, String> {
        let script = parse("q", &format!("{text}\nSELECT 1;"), &[]).unwrap();
        values(&script, scale, &Stream::new(7, 1), seq)
    }

    #[test]
    fn values_are_a_pure_function_of_seed_and_sequence() {
        let script = parse("q", "\\set a random(1, 1000000)\n\\set b random(1, 1000000)\nSELECT :a;", &[]).unwrap();
        let (s, other) = (Stream::new(7, 1), Stream::new(8, 1));
        assert_eq!(values(&script, 1.0, &s, 5), values(&script, 1.0, &s, 5));
        assert_ne!(values(&script, 1.0, &s, 5), values(&script, 1.0, &s, 6));
        assert_ne!(values(&script, 1.0, &s, 5), values(&script, 1.0, &other, 5));
        let v = values(&script, 1.0, &s, 5).unwrap();
        assert_ne!(v[1], v[2], "each \\set draws its own number");
    }

    #[test]
    fn uniform_draws_cover_their_range_and_stay_inside() {
        let mut seen = [0u32; 6];
        for seq in 0..6000 {
            let ScriptValue::Int(n) = one("\\set k random(-2, 3)", 1.0, seq).unwrap()[1] else { panic!("an int") };
            seen[(n + 2) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn scale_is_the_data_sets_and_doubles_round_to_integers_where_needed() {
        assert_eq!(one("\\set k 100000 * :scale", 0.01, 0).unwrap()[1], ScriptValue::Float(1000.0));
        let ScriptValue::Int(k) = one("\\set k random(1, 100000 * :scale)", 0.01, 3).unwrap()[1] else { panic!("an int") };
        assert!((1..=1000).contains(&k));
        assert_eq!(one("\\set k 7 / 2 + 7 % 4", 1.0, 0).unwrap()[1], ScriptValue::Int(6));
        assert_eq!(one("\\set k greatest(1, 5.5, 2)", 1.0, 0).unwrap()[1], ScriptValue::Float(5.5));
    }

    #[test]
    fn skewed_draws_favour_the_low_end_and_bad_parameters_are_refused() {
        let low_share = |text: &str| {
            let low = (0..4000).filter(|&seq| matches!(one(text, 1.0, seq).unwrap()[1], ScriptValue::Int(n) if n <= 10)).count();
            low as f64 / 4000.0
        };
        assert!(low_share("\\set k random_zipfian(1, 1000, 1.5)") > 0.5);
        assert!(low_share("\\set k random_exponential(1, 1000, 50)") > 0.3);
        assert!(low_share("\\set k random(1, 1000)") < 0.05);
        for (text, error) in [
            ("\\set k random(5, 1)", "q line 1: empty range given to random(5, 1)"),
            ("\\set k random_zipfian(1, 10, 0.5)", "q line 1: random_zipfian: parameter 0.5 must be in [1.001, 1000]"),
            ("\\set k random_exponential(1, 10, 0)", "q line 1: random_exponential: parameter 0 must be greater than 0"),
            ("\\set k 1 / 0", "q line 1: division by zero"),
        ] {
            assert_eq!(one(text, 1.0, 0).unwrap_err(), error);
        }
    }
}
