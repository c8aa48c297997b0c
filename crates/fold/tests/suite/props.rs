//! Property tests for every encode / decode pair.

use fold::json::{self, Value};
use fold::rs::ReedSolomon;
use fold::{Compression, Ecc, WriteOptions};
use proptest::prelude::*;

use super::{build, read_all};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Int(n.to_string())),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::Float),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn json_dump_then_parse_is_identity(v in json_value(), ascii in any::<bool>()) {
        let text = v.to_python_json(ascii, false);
        prop_assert_eq!(json::parse(&text).unwrap(), v);
    }

    #[test]
    fn python_float_repr_round_trips(x in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let s = json::python_float_repr(x);
        prop_assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits());
    }

    #[test]
    fn rs_corrects_any_errors_up_to_half_the_parity(
        nsym in 1_usize..=64,
        data in prop::collection::vec(any::<u8>(), 0..191),
        errs in prop::collection::vec((any::<prop::sample::Index>(), 1_u8..=255), 0..32),
    ) {
        let rs = ReedSolomon::new(nsym).unwrap();
        let parity = rs.encode_codeword(&data);
        let mut cw: Vec<u8> = data.iter().chain(&parity).copied().collect();
        let mut seen = Vec::new();
        for (idx, x) in errs.into_iter().take(nsym / 2) {
            let p = idx.index(cw.len());
            if !seen.contains(&p) { seen.push(p); cw[p] ^= x; }
        }
        let (d, p) = cw.split_at_mut(data.len());
        prop_assert_eq!(rs.correct_codeword(d, p), Ok(seen.len()));
        prop_assert_eq!(d.to_vec(), data);
        prop_assert_eq!(p.to_vec(), parity);
    }

    #[test]
    fn write_then_read_is_identity(
        chunks in prop::collection::vec((any::<String>(), "[A-Z0-9]{4}", prop::collection::vec(any::<u8>(), 0..600)), 0..5),
        zstd in any::<bool>(),
        ecc in prop::sample::select(vec![Ecc::None, Ecc::Rs(3), Ecc::Rs(32)]),
        ts in any::<f64>(),
    ) {
        let mut seen = std::collections::HashSet::new();
        let chunks: Vec<_> = chunks.into_iter().filter(|c| seen.insert(c.0.clone())).collect();
        let spec: Vec<super::Spec<'_>> = chunks.iter().map(|(n, t, p)| (n.as_str(), t.as_str(), p.as_slice())).collect();
        let compression = if zstd { Compression::Zstd } else { Compression::None };
        let bytes = build(WriteOptions::new(compression, ecc), &spec, Vec::new(), ts);
        let got = read_all(&bytes).unwrap();
        prop_assert_eq!(got.len(), spec.len());
        for ((n, _, p), (gn, gp)) in spec.iter().zip(&got) {
            prop_assert_eq!(*n, gn.as_str());
            prop_assert_eq!(*p, gp.as_slice());
        }
    }
}
