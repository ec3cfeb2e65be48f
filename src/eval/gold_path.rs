//! A simulation model that knows each question's gold path (datasets such as PathQuestion give
//! one) and otherwise **reads only its prompt**. It measures the engine: its ceiling when every
//! choice is right, and what that costs in calls. It never measures an LLM's accuracy.
//!
//! What it may do with the gold path, and nothing more:
//! - **choose among what the prompt offers**: relations, entities, candidate paths, which shown
//!   entity to search next, which shown triples to keep; an analysis indicator made of the gold
//!   relation names;
//! - **say "sufficient" and answer only when the triples shown in the prompt chain the topic,
//!   through the gold relations in order and in their stored direction, to a gold answer**
//!   (PoG and GoG: the union of every path or observation shown); the answer it gives is that
//!   chain's end, as the prompt writes it.
//!
//! What it never does: name a gold answer or entity the prompt does not show, write a triple
//! (GoG's `Generate` gets nothing from it), or answer from "its own knowledge" (`{unknown}`).
//! It tells prompts apart by their text (the default templates), never by the engine's step
//! name. A question whose text repeats with other answers follows the first line's gold path,
//! as any reader of the question text must.

use crate::engine::Registry;
use crate::engine::simulate::{GoldPath, Shown, Simulate};
use crate::llm::{ChatRequest, Completion, LanguageModel, LlmError, Usage};
use async_trait::async_trait;
use std::collections::HashMap;

/// Follows the gold paths of a set of questions (keyed by the question as asked, trimmed),
/// replying to each prompt as its template's simulation does (each method simulates its own
/// templates: see `engine::simulate`).
pub struct GoldPathModel {
    gold: HashMap<String, GoldPath>,
    /// Each simulated template's name, the lead of its default text (its first line up to its
    /// first placeholder) and its simulation.
    templates: Vec<(&'static str, &'static str, Simulate)>,
}

impl GoldPathModel {
    /// The first gold path given for a question text wins (a reader of the text cannot tell
    /// repeats apart). It replies to the templates of the program's methods.
    pub fn new(gold: impl IntoIterator<Item = (String, GoldPath)>) -> Self {
        Self::of(Registry::program(), gold)
    }

    fn of(registry: &Registry, gold: impl IntoIterator<Item = (String, GoldPath)>) -> Self {
        let mut map = HashMap::new();
        for (q, g) in gold {
            map.entry(q.trim().to_string()).or_insert(g);
        }
        let templates = registry
            .templates()
            .into_iter()
            .filter_map(|t| {
                let simulate = registry.simulation(t.name())?;
                let first = t.default_text().lines().next().unwrap_or_default();
                Some((t.name(), first.split("{{").next().unwrap_or_default(), simulate))
            })
            .collect();
        Self { gold: map, templates }
    }

    /// The simulation of the template a prompt was rendered from: the one whose lead the prompt
    /// starts with, the longest such lead winning; under the shared-prefix layout, the task the
    /// prompt's first line names. It tells prompts apart by their text (the default
    /// templates), never by the engine's step name.
    fn simulation(&self, prompt: &str) -> Option<Simulate> {
        if let Some(task) = prompt.strip_prefix("Task: ").and_then(|rest| rest.lines().next()) {
            return self.templates.iter().find(|(name, _, _)| *name == task).map(|&(_, _, s)| s);
        }
        self.templates
            .iter()
            .filter(|(_, lead, _)| !lead.is_empty() && prompt.starts_with(lead))
            .max_by_key(|(_, lead, _)| lead.len())
            .map(|&(_, _, s)| s)
    }

    fn reply(&self, r: &ChatRequest) -> Result<String, LlmError> {
        let shown = Shown::new(&r.prompt, &r.system);
        let q = shown.question;
        let gold =
            self.gold.get(q).ok_or_else(|| LlmError::Config(format!("the gold-path model has no path for {q:?}")))?;
        let simulate = self.simulation(&r.prompt).ok_or_else(|| {
            LlmError::Config(
                "the gold-path simulation reads the default prompts of methods that simulate them, and this prompt is none of them".into(),
            )
        })?;
        Ok(simulate(&shown, gold))
    }
}

#[async_trait]
impl LanguageModel for GoldPathModel {
    fn describe(&self) -> String {
        "gold-path simulation (chooses along each question's gold path, reads only its prompt; not an LLM)".into()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let text = self.reply(request)?;
        // Tokens as the scripted model estimates them: words, for cost shapes only.
        let usage = Usage {
            prompt_tokens: request.prompt.split_whitespace().count() as u64,
            completion_tokens: text.split_whitespace().count() as u64,
            ..Usage::default()
        };
        Ok(Completion { text, usage, ..Default::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::simulate::tests::gold;
    use crate::prompts::Template;

    #[test]
    fn tells_prompts_apart_by_their_text() {
        let registry = Registry::program();
        let model = GoldPathModel::of(registry, [("q".to_string(), gold())]);
        let render = |t: Template| t.default_text().replace("{{", "").replace("}}", "");
        for template in registry.templates() {
            match registry.simulation(template.name()) {
                Some(want) => {
                    let found = model.simulation(&render(template)).map(|s| s as usize);
                    assert_eq!(found, Some(want as usize), "{template}");
                }
                None => assert!(["system", "extract"].contains(&template.name()), "{template} has no simulation"),
            }
        }
        assert!(model.simulation("Tell me a joke.").is_none());
        assert!(model.simulation("Task: relation_prune\nQuestion: q").is_some());
    }

    #[test]
    fn generate_writes_nothing() {
        let model = GoldPathModel::of(Registry::program(), [("q".to_string(), gold())]);
        let prompt = Registry::program()
            .template("gog_generate")
            .unwrap()
            .default_text()
            .replace("{{question}}", "q")
            .replace("{{thought}}", "charles vyner brooke parents")
            .replace("{{triples}}", "");
        let request = ChatRequest {
            step: String::new(),
            system: String::new(),
            prompt,
            temperature: 0.0,
            max_tokens: 256,
            sample: 0,
            schema: None,
            extract: None,
        };
        assert_eq!(model.reply(&request).unwrap(), "");
    }
}
