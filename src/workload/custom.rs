//! The values one op of a custom operation binds: each parameter drawn from its generator
//! (a key of a loaded row under a request distribution, an integer range, a pick from a
//! list, a column of a generated row) with dbsweep's counter-based randomness, so they are
//! a pure function of (seed, sequence number) and every system and run sees the same.
//!
//! Owns the draws. Must not parse templates (`plan::custom`) or run them.

use super::distribution::Distribution;
use crate::base::custom::{CustomOp, KeyDistribution, ParamSource};
use crate::base::rng::Stream;
use crate::base::script::ScriptValue;
use crate::base::table::Value;
use crate::data::Dataset;
use std::sync::Arc;

/// A custom operation with what its draws need: the data set and each parameter's
/// distribution, made once.
#[derive(Debug, Clone)]
pub struct CustomDraws {
    pub op: Arc<CustomOp>,
    dataset: Dataset,
    distributions: Vec<Option<Distribution>>,
    scale: ScriptValue,
}

impl CustomDraws {
    pub fn new(op: Arc<CustomOp>, dataset: &Dataset) -> Self {
        let distributions = op
            .params
            .iter()
            .map(|p| match p {
                ParamSource::Key { distribution, .. } | ParamSource::Column { distribution, .. } => Some(match distribution {
                    KeyDistribution::Uniform | KeyDistribution::Sequential => Distribution::uniform(),
                    KeyDistribution::Zipfian => Distribution::zipfian(),
                    KeyDistribution::Latest => Distribution::latest(),
                }),
                _ => None,
            })
            .collect();
        let scale = scale_of(dataset);
        CustomDraws { op, dataset: dataset.clone(), distributions, scale }
    }

    /// The values by slot (`scale`, then each parameter) of the op with sequence number `seq`.
    pub fn values(&self, stream: &Stream, seq: u64) -> Vec<ScriptValue> {
        let mut values = Vec::with_capacity(self.op.params.len() + 1);
        values.push(self.scale.clone());
        for (index, param) in self.op.params.iter().enumerate() {
            let lane = 1 + index as u64;
            let row_of = |table: usize, distribution: KeyDistribution| {
                let n = self.dataset.initial_rows(table).max(1);
                let item = match distribution {
                    KeyDistribution::Sequential => seq % n,
                    _ => self.distributions[index].as_ref().expect("keys have a distribution").sample(stream, seq, lane, n),
                };
                self.dataset.key_at(table, item)
            };
            values.push(match param {
                ParamSource::Key { table, distribution } => ScriptValue::Int(row_of(*table, *distribution)),
                ParamSource::Range { lo, hi } => {
                    let span = (*hi as i128 - *lo as i128 + 1) as u128;
                    let draw = (stream.u64(seq, lane * 8) as u128 * span) >> 64;
                    ScriptValue::Int((*lo as i128 + draw as i128) as i64)
                }
                ParamSource::Pick(list) => list[stream.below(seq, lane * 8, list.len() as u64) as usize].clone(),
                ParamSource::Column { table, column, distribution } => {
                    let row = self.dataset.new_row(*table, row_of(*table, *distribution));
                    value_of(&row[*column])
                }
            });
        }
        values
    }
}

/// The data's scale (`:scale` / `${scale}`): TPC-H's or pgbench's, else the rows of the
/// first table.
fn scale_of(dataset: &Dataset) -> ScriptValue {
    let scale = match &dataset.spec {
        crate::data::DataSpec::Tpch { scale } => *scale,
        spec => spec.pgbench_scale().unwrap_or_else(|| dataset.initial_rows(0) as f64),
    };
    if scale.fract() == 0.0 { ScriptValue::Int(scale as i64) } else { ScriptValue::Float(scale) }
}

/// A row's value as a parameter: numbers as numbers (a decimal as its float), text and
/// dates as text (ISO), NULL as the text `NULL`... which a study cannot ask for: columns
/// of generated rows are never NULL where a parameter reads them (checked by the plan).
pub fn value_of(value: &Value) -> ScriptValue {
    match value {
        Value::Int(i) => ScriptValue::Int(*i),
        Value::Float(x) => ScriptValue::Float(*x),
        Value::Decimal(d) => ScriptValue::Float(d.0 as f64 / 100.0),
        Value::Text(t) => ScriptValue::Text(t.to_string()),
        Value::Date(d) => ScriptValue::Text(d.to_iso()),
        Value::Null => ScriptValue::Text("NULL".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::custom::CustomOp;
    use crate::data::DataSpec;

    fn op(params: Vec<ParamSource>) -> Arc<CustomOp> {
        let variables = std::iter::once("scale".to_string()).chain((0..params.len()).map(|i| format!("p{i}"))).collect();
        Arc::new(CustomOp {
            name: "t".into(),
            variables,
            params,
            reads: true,
            sql: None,
            redis: vec![],
            memcached: vec![],
            mongodb: vec![],
            cql: vec![],
            setup: None,
        })
    }

    #[test]
    fn draws_are_pure_and_stay_in_their_ranges() {
        let data = Dataset::new(&DataSpec::Kv { rows: 100, payload_bytes: 10 }, 7);
        let draws = CustomDraws::new(
            op(vec![
                ParamSource::Key { table: 0, distribution: KeyDistribution::Zipfian },
                ParamSource::Range { lo: -3, hi: 3 },
                ParamSource::Pick(vec![ScriptValue::Text("A".into()), ScriptValue::Text("N".into())]),
                ParamSource::Key { table: 0, distribution: KeyDistribution::Sequential },
                ParamSource::Column { table: 0, column: 0, distribution: KeyDistribution::Uniform },
            ]),
            &data,
        );
        let stream = Stream::new(7, 3);
        assert_eq!(draws.values(&stream, 5), draws.values(&stream, 5));
        assert_eq!(draws.values(&stream, 5)[0], ScriptValue::Int(100), "the scale of kv data is its rows");
        let mut picks = std::collections::BTreeSet::new();
        for seq in 0..500 {
            let v = draws.values(&stream, seq);
            assert!(matches!(v[1], ScriptValue::Int(k) if (0..100).contains(&k)), "{v:?}");
            assert!(matches!(v[2], ScriptValue::Int(k) if (-3..=3).contains(&k)), "{v:?}");
            assert_eq!(v[4], ScriptValue::Int(seq as i64 % 100));
            assert!(matches!(v[5], ScriptValue::Int(k) if (0..100).contains(&k)), "{v:?}");
            picks.insert(v[3].raw());
        }
        assert_eq!(picks.into_iter().collect::<Vec<_>>(), ["A", "N"]);
    }
}
