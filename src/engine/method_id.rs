//! A method's id: what `--method`, configs and sessions call it. A leaf: the settings name a
//! method by it without knowing the registry or any method.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;
use std::sync::LazyLock;
use std::sync::{Mutex, PoisonError};

/// Which method, by its registry name (`tog`, `pog-e`, or one registered from outside).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodId(&'static str);

impl MethodId {
    pub const TOG: Self = Self::named("tog");
    pub const TOG_R: Self = Self::named("tog-r");
    pub const POG: Self = Self::named("pog");
    pub const POG_E: Self = Self::named("pog-e");
    pub const GOG: Self = Self::named("gog");
    pub const IO: Self = Self::named("io");
    pub const COT: Self = Self::named("cot");
    pub const SC: Self = Self::named("sc");
    /// The built-in methods' ids (their rows are in `methods/mod.rs`).
    const BUILTIN: [Self; 8] =
        [Self::TOG, Self::TOG_R, Self::POG, Self::POG_E, Self::GOG, Self::IO, Self::COT, Self::SC];

    pub const fn named(name: &'static str) -> Self {
        Self(name)
    }

    pub fn as_str(&self) -> &'static str {
        self.0
    }
}

impl From<&str> for MethodId {
    /// Ids are few and live as long as the program: a name not built in is kept once (so
    /// ids stay `Copy` and comparable in patterns).
    fn from(name: &str) -> Self {
        if let Some(id) = Self::BUILTIN.iter().find(|id| id.0 == name) {
            return *id;
        }
        static OTHERS: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);
        let mut others = OTHERS.lock().unwrap_or_else(PoisonError::into_inner);
        match others.get(name) {
            Some(&kept) => Self(kept),
            None => {
                let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
                others.insert(kept);
                Self(kept)
            }
        }
    }
}

impl Serialize for MethodId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for MethodId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Self::from(name.as_ref()))
    }
}

impl fmt::Debug for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl fmt::Display for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
