//! PathQuestion samples with the gold-path simulation, for the benches that measure on them.

use ongraph::engine::{MethodId, Run, Settings, Topics};
use ongraph::kg::{KgProfile, KnowledgeGraph};
use ongraph::prompts::Prompts;
use ongraph::testing::dataset::{Item, gold_paths, pathquestion};
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::load_file;
use ongraph::testing::llm::GoldPathModel;
use std::path::Path;
use std::sync::Arc;

/// One question file with its KB and the simulation that follows its gold paths.
pub struct Sample {
    pub file: &'static str,
    pub kg: Arc<dyn KnowledgeGraph>,
    pub items: Vec<Item>,
    pub model: Arc<GoldPathModel>,
}

/// The first `limit` questions of PQ-2H and PQ-3H, each with its own KB; `None` (said) when
/// ../shared/datasets/pathquestion is not there.
pub fn samples(limit: usize) -> Option<Vec<Sample>> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets/pathquestion"));
    let mut out = Vec::new();
    for (kb, file) in [("2H-kb.txt", "PQ-2H.txt"), ("3H-kb.txt", "PQ-3H.txt")] {
        let Ok((graph, _)) = load_file(&dir.join(kb), KgProfile::named_ids(), false) else {
            println!("(PathQuestion not found at {}: nothing measured on it)", dir.display());
            return None;
        };
        let mut items = pathquestion::load(&dir.join(file)).expect("PathQuestion questions load");
        items.truncate(limit);
        let model = Arc::new(GoldPathModel::new(gold_paths(&items)));
        out.push(Sample { file, kg: Arc::new(graph), items, model });
    }
    Some(out)
}

impl Sample {
    /// A driver of its own: the memo of identical calls must not carry one method's replies
    /// into another's counts.
    pub fn driver(&self) -> Driver {
        Driver::new(self.kg.clone(), self.model.clone())
    }

    /// `item` answered by `method`, its topic entity given as the dataset links it.
    pub async fn answer(&self, driver: &Driver, item: &Item, method: MethodId, prompts: &Arc<Prompts>) -> Run {
        let settings = Settings { method, ..Settings::default() };
        let topics = Topics::Linked(item.topics.clone());
        let kg = &self.kg;
        let mut run = Run::new(&item.question, topics, settings, prompts.clone(), kg.profile().clone(), kg.name())
            .expect("run starts");
        driver.run(&mut run, |_, _| {}).await.expect("the simulation answers every prompt");
        run
    }
}
