//! Re-running a kept run over the KG with a correction applied: the same question, method,
//! settings and seed. A session's run takes its model's replies from its recording wherever the
//! engine asks the same batch, so only the calls the correction changes are made; an eval
//! record's question is asked again from its dataset, of the gold-path simulation when the
//! run was made with it, else of the model given.

use super::KeptRun;
use crate::dataset::{Format, Item, gold_paths};
use crate::driver::Driver;
use crate::engine::{Registry, Run};
use crate::eval::gold_path::GoldPathModel;
use crate::kg::KnowledgeGraph;
use crate::llm::LanguageModel;
use crate::overlay::{Correction, OverlayKg};
use crate::session::{Player, Session};
use std::sync::Arc;

/// What a run answers with the correction applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Rerun {
    /// The answer(s), best first.
    pub answers: Vec<String>,
    /// LLM calls made (replies taken from a recording are not made).
    pub calls: u64,
}

/// The KG `base` seen through the corrections `applying`, `correction` among them applied last
/// and active (as if just made: a teammate's awaiting review, one undone), for [`rerun`].
pub fn applied(
    base: Arc<dyn KnowledgeGraph>,
    applying: &[Correction],
    correction: &Correction,
) -> Arc<dyn KnowledgeGraph> {
    let mut with_it: Vec<Correction> = applying.iter().filter(|c| c.id != correction.id).cloned().collect();
    with_it.push(Correction { active: true, ..correction.clone() });
    Arc::new(OverlayKg::new(base, &with_it))
}

/// Runs `kept` again over `kg` (the KG seen through the corrections, the one asked about
/// among them), asking `llm` what its recording or its dataset's gold paths do not answer.
pub async fn rerun(kept: &KeptRun, kg: Arc<dyn KnowledgeGraph>, llm: Arc<dyn LanguageModel>) -> Result<Rerun, String> {
    match &kept.topics {
        Some(_) => from_session(kept, kg, llm).await,
        None => from_records(kept, kg, llm).await,
    }
}

async fn from_session(
    kept: &KeptRun,
    kg: Arc<dyn KnowledgeGraph>,
    llm: Arc<dyn LanguageModel>,
) -> Result<Rerun, String> {
    let session = Session::load(&kept.file).map_err(|e| e.to_string())?;
    let index = kept.at.checked_sub(1).ok_or("no run 0")?;
    let record = session.runs.get(index).ok_or_else(|| format!("the session has no run {}", kept.at))?;
    let registry = Registry::program();
    let prompts = Arc::new(session.prompts_in(registry).map_err(|e| e.to_string())?);
    let mut run = session.start_in(registry, index, prompts).map_err(|e| e.to_string())?;
    let mut player = Player::new(record);
    let driver = Driver::new(kg, llm);
    loop {
        // The user's recorded steering applies while the run follows its recording.
        if let Some(change) = player.change() {
            // A change the corrected run can no longer take (a node that is gone) is left out.
            if let Err(e) = player.play(&mut run, &change) {
                tracing::info!(run = %kept.place(), "a recorded change no longer applies: {e}");
            }
            continue;
        }
        match driver.step_with(&mut run, Some(&mut player), None).await {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(answered(&run))
}

async fn from_records(
    kept: &KeptRun,
    kg: Arc<dyn KnowledgeGraph>,
    llm: Arc<dyn LanguageModel>,
) -> Result<Rerun, String> {
    let meta = read_meta(&kept.file.with_file_name("run.json"))?;
    let ids = match meta.topic_ids.as_deref() {
        Some("wikidata") => crate::dataset::tog::TopicIds::Wikidata,
        Some(_) => crate::dataset::tog::TopicIds::Freebase,
        // A run made before run.json said: as eval reads them by default.
        None if kg.profile().label_predicates == crate::kg::KgProfile::wikidata().label_predicates => {
            crate::dataset::tog::TopicIds::Wikidata
        }
        None => crate::dataset::tog::TopicIds::Freebase,
    };
    let prompts = Registry::program()
        .prompts(meta.prompts.as_deref().map(std::path::Path::new))
        .map_err(|e| format!("its prompts ({}): {e}", meta.prompts.as_deref().unwrap_or("built in")))?;
    let items = crate::dataset::load(std::path::Path::new(&meta.dataset), meta.format, ids)
        .map_err(|e| format!("its dataset: {e}"))?;
    let item: &Item = items.get(kept.at).ok_or_else(|| format!("its dataset has no question {}", kept.at))?;
    if item.question != kept.question {
        return Err(format!("its dataset ({}) holds another question at {} now", meta.dataset, kept.at));
    }
    let llm: Arc<dyn LanguageModel> =
        if meta.llm.starts_with("gold-path") { Arc::new(GoldPathModel::new(gold_paths(&items))) } else { llm };
    let kg: Arc<dyn KnowledgeGraph> =
        if item.hidden.is_empty() { kg } else { Arc::new(OverlayKg::new(kg, &[]).with_hidden(&item.hidden)) };
    let mut run = Run::new(
        &item.question,
        item.engine_topics(),
        kept.settings.clone(),
        Arc::new(prompts),
        kg.profile().clone(),
        kg.name(),
    )
    .map_err(|e| e.to_string())?;
    Driver::new(kg, llm).run(&mut run, |_, _| {}).await.map_err(|e| e.to_string())?;
    Ok(answered(&run))
}

fn answered(run: &Run) -> Rerun {
    Rerun { answers: run.answer().map(|a| a.answers.clone()).unwrap_or_default(), calls: run.costs().llm_calls }
}

/// What `rerun` needs of an eval run's run.json.
#[derive(serde::Deserialize)]
struct Meta {
    dataset: String,
    format: Format,
    llm: String,
    /// The prompts directory it ran with (none: the built-in prompts).
    #[serde(default)]
    prompts: Option<String>,
    #[serde(default)]
    topic_ids: Option<String>,
}

fn read_meta(path: &std::path::Path) -> Result<Meta, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not an eval run's: {e}", path.display()))
}
