//! A server's memory model as grammar data (`[memory_model]`): how a rank's device memory
//! splits into categories, each a sum or difference of the figures its log prints, and
//! how the server sizes its KV pool from its settings, and which setting skips a
//! category's phase. `analysis::breakdown` and `analysis::capacity` evaluate it on a run,
//! and `analysis::remedy` computes a memory failure's remedies from the same rules;
//! nothing here reads a log.
//!
//! A formula is `term (+|- term)*`; a term is `phase.figure` (a built-in figure,
//! `weight_load.avail_before`), `event_kind.field` (a field an event of that
//! kind captured, `kv_budget.total_gpu_bytes`), or one of the words `device` (the
//! breakdown's device memory) and `rest` (the device less every other category).

use serde::Deserialize;

use super::GrammarError;
use crate::base::event::{BuiltinFigure, Phase};

/// `[memory_model]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryModelSpec {
    /// Formulas for the device memory a rank had, tried in order.
    #[serde(default)]
    pub(crate) device: Vec<String>,
    /// What the device formula measures: `free_at_start` (the free memory the server
    /// measured before it took any) or `total` (the device's capacity).
    pub(crate) device_basis: String,
    /// The pool's size in tokens, tried in order.
    #[serde(default)]
    pub(crate) tokens: Vec<String>,
    /// The pool's size in pages (blocks), when it prints no token count: × the page size.
    #[serde(default)]
    pub(crate) blocks: Vec<String>,
    /// The setting giving tokens per page, and its default.
    #[serde(default)]
    pub(crate) page_size: Option<String>,
    #[serde(default)]
    pub(crate) page_size_default: Option<i64>,
    /// Settings (or event fields, `kind.field`) that cap concurrent requests.
    #[serde(default)]
    pub(crate) limits: Vec<String>,
    /// The setting naming the KV cache's element type (`auto` follows the model's).
    #[serde(default)]
    pub(crate) kv_dtype: Option<String>,
    /// The setting giving the tensor-parallel size.
    #[serde(default)]
    pub(crate) tp_size: Option<String>,
    pub(crate) pool: Option<PoolSpec>,
    #[serde(default)]
    pub(crate) category: Vec<CategorySpec>,
}

/// The pool's budget: `total × fraction − used`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PoolSpec {
    pub(crate) fraction: String,
    #[serde(default)]
    pub(crate) fraction_default: Option<f64>,
    pub(crate) total: Vec<String>,
    /// What the server subtracts from `total × fraction`; none (LMDeploy's
    /// `cache_max_entry_count` × free memory) when left out.
    #[serde(default)]
    pub(crate) used: Vec<String>,
    /// The step a remedy moves the fraction by (0.01: how the settings are written).
    #[serde(default)]
    pub(crate) step: Option<f64>,
}

/// A setting whose value skips the category's phase and the memory it takes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SkipSpec {
    pub(crate) setting: String,
    pub(crate) value: String,
    /// What skipping costs besides memory, in a few words.
    #[serde(default)]
    pub(crate) cost: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CategorySpec {
    pub(crate) category: String,
    /// Formulas tried in order; empty: the log never separates this category.
    #[serde(default)]
    pub(crate) formula: Vec<String>,
    /// Where the category's memory is counted when no formula applies.
    #[serde(default)]
    pub(crate) merged_into: Option<String>,
    /// The setting that skips this category's phase (only `cuda_graphs` has one phase
    /// of its own that servers let you skip).
    #[serde(default)]
    pub(crate) skip: Option<SkipSpec>,
}

/// The breakdown's categories, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// NCCL, custom all-reduce buffers, the CUDA context: memory taken around
    /// distributed init, mostly outside PyTorch's allocator.
    Communication,
    /// The model's weights (the weight_load phase).
    Weights,
    /// The KV cache pool (the kv_cache phase).
    KvPool,
    /// CUDA graph capture (the cuda_graph phase).
    CudaGraphs,
    /// Activations and workspace a grammar's formulas measure.
    Activations,
    /// What no other category accounts for.
    Other,
    /// Device memory left free.
    Free,
}

impl Category {
    pub(crate) const ALL: [Category; 7] = [
        Category::Communication,
        Category::Weights,
        Category::KvPool,
        Category::CudaGraphs,
        Category::Activations,
        Category::Other,
        Category::Free,
    ];
    pub(crate) fn name(self) -> &'static str {
        match self {
            Category::Communication => "communication",
            Category::Weights => "weights",
            Category::KvPool => "kv_pool",
            Category::CudaGraphs => "cuda_graphs",
            Category::Activations => "activations",
            Category::Other => "other",
            Category::Free => "free",
        }
    }
    pub(crate) fn from_name(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.name() == s)
    }
    /// The start-up phase that takes this category's memory, for those taken by one.
    pub(crate) fn phase(self) -> Option<Phase> {
        Some(match self {
            Category::Communication => Phase::DistInit,
            Category::Weights => Phase::WeightLoad,
            Category::KvPool => Phase::KvCache,
            Category::CudaGraphs => Phase::CudaGraph,
            _ => return None,
        })
    }
    pub(crate) fn of_phase(p: Phase) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.phase() == Some(p))
    }
}

/// What one term of a formula reads.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Term {
    /// A built-in figure of a phase (a grammar's own figures are read as `kind.field`).
    Figure(Phase, BuiltinFigure),
    /// An event kind and one of its captured fields.
    Field(String, String),
    Device,
    Rest,
}

/// `+ term` or `- term`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Formula {
    pub(crate) terms: Vec<(i8, Term)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceBasis {
    FreeAtStart,
    Total,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PoolRule {
    pub(crate) fraction: String,
    pub(crate) fraction_default: Option<f64>,
    pub(crate) total: Vec<Formula>,
    pub(crate) used: Vec<Formula>,
    /// In (0, 1).
    pub(crate) step: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SkipRule {
    pub(crate) setting: String,
    pub(crate) value: String,
    pub(crate) cost: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CategoryRule {
    pub(crate) category: Category,
    pub(crate) formulas: Vec<Formula>,
    pub(crate) merged_into: Option<Category>,
    pub(crate) skip: Option<SkipRule>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MemoryModel {
    /// The grammar that declared it.
    pub(crate) grammar: String,
    pub(crate) device: Vec<Formula>,
    pub(crate) device_basis: DeviceBasis,
    pub(crate) tokens: Vec<Formula>,
    pub(crate) blocks: Vec<Formula>,
    pub(crate) page_size: Option<String>,
    pub(crate) page_size_default: i64,
    pub(crate) limits: Vec<String>,
    pub(crate) kv_dtype: Option<String>,
    pub(crate) tp_size: Option<String>,
    pub(crate) pool: Option<PoolRule>,
    pub(crate) categories: Vec<CategoryRule>,
}

fn bad(origin: &str, message: String) -> GrammarError {
    GrammarError::Knowledge {
        origin: origin.into(),
        message: format!("memory_model: {message}"),
    }
}

fn term(origin: &str, word: &str) -> Result<Term, GrammarError> {
    match word {
        "device" => return Ok(Term::Device),
        "rest" => return Ok(Term::Rest),
        _ => {}
    }
    let Some((a, b)) = word.split_once('.') else {
        return Err(bad(
            origin,
            format!("`{word}` is not `phase.figure`, `event_kind.field`, `device` or `rest`"),
        ));
    };
    if a.is_empty() || b.is_empty() {
        return Err(bad(origin, format!("`{word}`: empty name")));
    }
    match (Phase::from_name(a), BuiltinFigure::from_name(b)) {
        (Some(p), Some(f)) => Ok(Term::Figure(p, f)),
        (Some(_), None) => Err(bad(
            origin,
            format!(
                "`{word}`: `{b}` is not a built-in figure ({}); a grammar's own figure is read by its event, `event_kind.capture`",
                BuiltinFigure::ALL.map(BuiltinFigure::name).join(", ")
            ),
        )),
        _ => Ok(Term::Field(a.to_string(), b.to_string())),
    }
}

/// Parses `a.b + c.d - e.f`.
pub(crate) fn parse_formula(origin: &str, text: &str) -> Result<Formula, GrammarError> {
    let mut terms = Vec::new();
    let mut sign = 1i8;
    let mut expect_term = true;
    for word in text.split_whitespace() {
        match (word, expect_term) {
            ("+", false) => {
                sign = 1;
                expect_term = true;
            }
            ("-", false) => {
                sign = -1;
                expect_term = true;
            }
            (w, true) => {
                let (s, w) = match w.strip_prefix('-') {
                    Some(rest) if terms.is_empty() => (-sign, rest),
                    _ => (sign, w),
                };
                terms.push((s, term(origin, w)?));
                expect_term = false;
            }
            (w, false) => {
                return Err(bad(
                    origin,
                    format!("`{text}`: expected + or - before `{w}`"),
                ))
            }
        }
    }
    if terms.is_empty() || expect_term {
        return Err(bad(origin, format!("`{text}` is not a formula")));
    }
    Ok(Formula { terms })
}

fn formulas(origin: &str, texts: &[String]) -> Result<Vec<Formula>, GrammarError> {
    texts.iter().map(|t| parse_formula(origin, t)).collect()
}

fn category(origin: &str, name: &str) -> Result<Category, GrammarError> {
    Category::from_name(name).ok_or_else(|| {
        bad(
            origin,
            format!("`{name}` is not a category (communication, weights, kv_pool, cuda_graphs, activations, other, free)"),
        )
    })
}

pub(crate) fn compile(
    origin: &str,
    grammar: &str,
    spec: Option<&MemoryModelSpec>,
) -> Result<Option<MemoryModel>, GrammarError> {
    let Some(s) = spec else { return Ok(None) };
    let device_basis = match s.device_basis.as_str() {
        "free_at_start" => DeviceBasis::FreeAtStart,
        "total" => DeviceBasis::Total,
        other => {
            return Err(bad(
                origin,
                format!("device_basis `{other}` is not free_at_start or total"),
            ))
        }
    };
    let mut categories: Vec<CategoryRule> = Vec::new();
    for c in &s.category {
        let cat = category(origin, &c.category)?;
        if categories.iter().any(|r| r.category == cat) {
            return Err(bad(origin, format!("category `{}` twice", c.category)));
        }
        let merged_into = c
            .merged_into
            .as_deref()
            .map(|m| category(origin, m))
            .transpose()?;
        if c.formula.is_empty() && merged_into.is_none() {
            return Err(bad(
                origin,
                format!("category `{}`: give a formula or merged_into", c.category),
            ));
        }
        if c.skip.is_some() && cat.phase().is_none() {
            return Err(bad(
                origin,
                format!("category `{}`: skip needs a category of one phase (communication, weights, kv_pool, cuda_graphs)", c.category),
            ));
        }
        categories.push(CategoryRule {
            category: cat,
            formulas: formulas(origin, &c.formula)?,
            merged_into,
            skip: c.skip.as_ref().map(|k| SkipRule {
                setting: k.setting.clone(),
                value: k.value.clone(),
                cost: k.cost.clone(),
            }),
        });
    }
    let pool = match &s.pool {
        Some(p) => {
            let step = p.step.unwrap_or(0.01);
            if !(step > 0.0 && step < 1.0) {
                return Err(bad(origin, format!("pool: step {step} is not in (0, 1)")));
            }
            Some(PoolRule {
                fraction: p.fraction.clone(),
                fraction_default: p.fraction_default,
                total: formulas(origin, &p.total)?,
                used: formulas(origin, &p.used)?,
                step,
            })
        }
        None => None,
    };
    let page_size_default = s.page_size_default.unwrap_or(1);
    if page_size_default < 1 {
        return Err(bad(origin, "page_size_default must be 1 or more".into()));
    }
    Ok(Some(MemoryModel {
        grammar: grammar.to_string(),
        device: formulas(origin, &s.device)?,
        device_basis,
        // No pool formula: the built-in kv_cache `tokens` figure, which the grammar's
        // events may give without naming it here.
        tokens: if s.tokens.is_empty() && s.blocks.is_empty() {
            formulas(origin, &["kv_cache.tokens".to_string()])?
        } else {
            formulas(origin, &s.tokens)?
        },
        blocks: formulas(origin, &s.blocks)?,
        page_size: s.page_size.clone(),
        page_size_default,
        limits: s.limits.clone(),
        kv_dtype: s.kv_dtype.clone(),
        tp_size: s.tp_size.clone(),
        pool,
        categories,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_parse_terms_and_signs() {
        let f = parse_formula("t", "weight_load.avail_before - weight_load.avail_after").unwrap();
        assert_eq!(
            f.terms,
            vec![
                (
                    1,
                    Term::Figure(Phase::WeightLoad, BuiltinFigure::AvailBefore)
                ),
                (
                    -1,
                    Term::Figure(Phase::WeightLoad, BuiltinFigure::AvailAfter)
                ),
            ]
        );
        let f = parse_formula("t", "kv_budget.total_gpu_bytes + rest").unwrap();
        assert_eq!(
            f.terms,
            vec![
                (1, Term::Field("kv_budget".into(), "total_gpu_bytes".into())),
                (1, Term::Rest)
            ]
        );
        for bad in [
            "",
            "a.b +",
            "a.b c.d",
            "plain",
            "weight_load.avail",
            "a. + b.c",
        ] {
            assert!(parse_formula("t", bad).is_err(), "{bad}");
        }
    }

    fn spec(text: &str) -> MemoryModelSpec {
        toml::from_str(text).expect("toml")
    }

    #[test]
    fn a_model_names_known_categories_once_with_a_formula_or_a_merge() {
        let ok = spec(concat!(
            "device_basis = \"total\"\n",
            "[[category]]\ncategory = \"weights\"\nformula = [\"weight_load.mem_usage\"]\n",
            "[[category]]\ncategory = \"free\"\nmerged_into = \"other\"\n",
        ));
        let m = compile("t", "g", Some(&ok))
            .expect("compiles")
            .expect("a model");
        assert_eq!(m.categories.len(), 2);
        assert_eq!(m.categories[1].merged_into, Some(Category::Other));
        for bad in [
            "device_basis = \"sometimes\"\n",
            "device_basis = \"total\"\n[[category]]\ncategory = \"heap\"\nformula = [\"a.b\"]\n",
            "device_basis = \"total\"\n[[category]]\ncategory = \"free\"\n",
            "device_basis = \"total\"\n[[category]]\ncategory = \"free\"\nformula = [\"a.b\"]\n[[category]]\ncategory = \"free\"\nformula = [\"c.d\"]\n",
            "device_basis = \"total\"\npage_size_default = 0\n",
            "device_basis = \"total\"\n[pool]\nfraction = \"f\"\ntotal = [\"device\"]\nused = [\"a.b\"]\nstep = 1.5\n",
            "device_basis = \"total\"\n[[category]]\ncategory = \"free\"\nmerged_into = \"other\"\nskip = { setting = \"s\", value = \"True\" }\n",
        ] {
            assert!(compile("t", "g", Some(&spec(bad))).is_err(), "{bad}");
        }
        assert_eq!(compile("t", "g", None).expect("no model"), None);
    }
}
