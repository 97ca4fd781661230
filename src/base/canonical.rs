//! Canonical JSON text: one spelling per JSON value (object keys sorted, no white space),
//! so that a hash or a tag over it does not depend on how the value was built or read back.
//!
//! Owns that spelling only. Must not hash, sign or write anything.

use serde_json::Value;

/// `value` as text with every object's keys in sorted order, whatever map type serde_json
/// uses. Numbers are spelled as serde_json spells them; with `float_roundtrip` a number read
/// back from that text is the same number and is spelled the same again.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_at_every_depth_and_floats_survive_a_round_trip() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": 0.1}], "a": "q\"", "c": 1e300}"#).unwrap();
        let text = canonical_json(&a);
        assert_eq!(text, r#"{"a":"q\"","b":[1,{"x":0.1,"y":2}],"c":1e+300}"#);
        let again: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(canonical_json(&again), text);
        let third: f64 = 0.1 + 0.2;
        let v = serde_json::json!({ "f": third });
        let back: Value = serde_json::from_str(&canonical_json(&v)).unwrap();
        assert_eq!(canonical_json(&back), canonical_json(&v), "{third} read back is spelled the same");
    }
}
