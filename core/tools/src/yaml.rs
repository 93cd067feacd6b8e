//! YAML read with a bound on what its aliases expand to, for the frontmatter of skill,
//! command and subagent files (`larik-skills`, `larik-subagents`). An alias repeats its
//! anchor's value wherever it appears, so a few lines of anchors and aliases can stand for
//! billions of values ("billion laughs"); `serde_yaml_ng` limits how often aliases are
//! followed, but not what each one copies, and one large anchor repeated by many aliases
//! still expands to the product of their counts. The document is first walked as it would
//! expand, counting values without keeping any, and refused past [`MOST_VALUES`]; only then
//! is it read.

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_yaml_ng::Value;

/// The most values a frontmatter block may expand to; real ones hold a few dozen.
pub const MOST_VALUES: usize = 10_000;

/// `text` read as YAML; the error is a predicate for the frontmatter ("its frontmatter is
/// not YAML: …").
pub fn read(text: &str) -> Result<Value, String> {
    let left = Cell::new(MOST_VALUES);
    if let Err(error) = Count(&left).deserialize(serde_yaml_ng::Deserializer::from_str(text)) {
        if left.get() == 0 {
            return Err(format!(
                "its frontmatter expands to more than {MOST_VALUES} values (through YAML aliases)"
            ));
        }
        return Err(format!("its frontmatter is not YAML: {error}"));
    }
    serde_yaml_ng::from_str(text).map_err(|error| format!("its frontmatter is not YAML: {error}"))
}

/// Walks one value as it expands, taking one from the count left for each value met.
struct Count<'a>(&'a Cell<usize>);

impl Count<'_> {
    fn take<E: de::Error>(&self) -> Result<(), E> {
        match self.0.get() {
            0 => Err(E::custom("too many values")),
            left => {
                self.0.set(left - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.take()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.take()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.take()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.take()?;
        deserializer.deserialize_any(self)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.take()?;
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        self.take()?;
        while items.next_element_seed(Count(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        self.take()?;
        while entries
            .next_entry_seed(Count(self.0), Count(self.0))?
            .is_some()
        {}
        Ok(())
    }

    fn visit_enum<A: EnumAccess<'de>>(self, tagged: A) -> Result<(), A::Error> {
        self.take()?;
        let ((), value) = tagged.variant_seed(Count(self.0))?;
        value.newtype_variant_seed(Count(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_bomb_is_refused_before_it_expands() {
        // One anchor of 2,000 values repeated by 2,000 aliases: four million values.
        let wide = format!(
            "x: &x [{}]\ny: [{}]\n",
            vec!["1"; 2000].join(","),
            vec!["*x"; 2000].join(",")
        );
        let error = read(&wide).expect_err("a bomb");
        assert!(error.contains("expands to more than"), "{error}");
        let mut nested = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n".to_string();
        for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            nested.push_str(&format!(
                "{name}: &{name} [{}]\n",
                vec![format!("*{previous}"); 9].join(",")
            ));
        }
        assert!(read(&nested).is_err());
    }

    #[test]
    fn anchors_tags_and_ordinary_documents_still_read() {
        let value = read("name: x\ndescription: &d \"text\"\nalso: *d\ntagged: !custom 3\nlist: [1, 2.5, null, true]\n")
            .expect("reads");
        assert_eq!(value.get("also").and_then(Value::as_str), Some("text"));
        assert!(read("a: [").expect_err("broken").contains("not YAML"));
        assert_eq!(read("").expect("empty"), Value::Null);
    }
}
