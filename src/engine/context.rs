//! The state every method shares (question, settings, prompts, beam, seeded randomness, costs,
//! trace, answer) and how a method asks the model through it.

use super::beam::Beam;
use super::events::{Costs, Event};
use super::structured::{ANSWER, REASONED_ANSWER, Reply};
use super::{Answer, PromptLayout, Request, Settings};
use crate::kg::KgProfile;
use crate::llm::{ChatRequest, Extraction};
use crate::prompts::{Prompt, Prompts, Template};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// The state shared by every method: what the run knows, apart from where its method is.
#[derive(Clone, Debug)]
pub struct Context {
    pub(crate) question: String,
    pub(crate) settings: Settings,
    pub(crate) prompts: Arc<Prompts>,
    pub(crate) profile: KgProfile,
    pub(crate) graph_name: String,
    pub(crate) beam: Beam,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) costs: Costs,
    pub(crate) trace: Vec<Event>,
    pub(crate) answer: Option<Answer>,
    /// The system message every call shares under [`PromptLayout::SharedPrefix`], once the
    /// method has said which templates its run renders.
    pub(crate) shared_prefix: Option<Arc<SharedPrefix>>,
}

/// The instructions and examples of every kind of call a run makes, in one system message,
/// and the fixed part each template contributed to it.
#[derive(Debug)]
pub(crate) struct SharedPrefix {
    system: String,
    sections: Vec<(Template, String)>,
}

/// What starts each kind of call's section of the shared system message, and its user message.
fn task_heading(template: Template) -> String {
    format!("Task: {}\n", template.name())
}

impl Context {
    /// Lays this run's prompts out with a shared prefix when its settings ask for one
    /// ([`PromptLayout::SharedPrefix`]): the fixed parts of `templates` (the kinds of call the
    /// run makes, in an order that is the same for every run of these settings) go into one
    /// system message, and each call's user message holds its own paragraph. A method calls it
    /// as it starts; a call of a template not listed keeps the per-call layout.
    pub fn share_prefix(&mut self, templates: &[Template]) {
        if self.settings.prompt_layout != PromptLayout::SharedPrefix {
            return;
        }
        let width = self.settings.width.to_string();
        let constants = [("width", width.as_str())];
        let (mut sections, mut unshared) = (Vec::new(), Vec::new());
        for &t in templates {
            match self.prompts.fixed_part(t, &constants, self.settings.structured) {
                Some(fixed) => sections.push((t, fixed)),
                None => unshared.push(t.name()),
            }
        }
        if !unshared.is_empty() {
            // Their calls go out with the plain system prompt, which evicts the shared one from
            // a one-prefix cache: said, so a rewritten template is not a silent slowdown.
            tracing::warn!(
                templates = ?unshared,
                "no fixed part to share (no blank line before the call's paragraph, or a placeholder \
                 other than {{{{width}}}} before it): these calls are laid out per call"
            );
        }
        if sections.is_empty() {
            return;
        }
        let mut system = self.prompts.render(super::templates::SYSTEM, &[]).trim().to_string();
        system.push_str(
            "\n\nEach request names one of the tasks below on its first line (`Task: NAME`); follow that \
             task's instructions and examples. A request that names no task carries its own instructions.",
        );
        for (template, fixed) in &sections {
            system.push_str("\n\n");
            system.push_str(&task_heading(*template));
            system.push_str(fixed.trim_end());
        }
        self.shared_prefix = Some(Arc::new(SharedPrefix { system, sections }));
    }

    /// The system message of this run's calls (see [`Run::system_message`](super::Run::system_message)).
    pub(crate) fn system_message(&self) -> String {
        match &self.shared_prefix {
            Some(shared) => shared.system.clone(),
            None => self.prompts.render(super::templates::SYSTEM, &[]).trim().to_string(),
        }
    }

    /// The shared system message and the call's user message for `prompt`, when the run shares
    /// a prefix and the prompt's fixed part is the one shared (anything else, e.g. a template
    /// rendered with other constants, keeps the per-call layout).
    fn shared_layout(&self, prompt: &Prompt) -> Option<(String, String)> {
        let shared = self.shared_prefix.as_ref()?;
        let split = prompt.split?;
        let (fixed, call) = prompt.text.split_at(split.at);
        shared
            .sections
            .iter()
            .any(|(t, f)| *t == split.template && f == fixed)
            .then(|| (shared.system.clone(), format!("{}{call}", task_heading(split.template))))
    }

    /// A call whose reply takes `shape` (asked for as JSON in structured mode).
    pub(crate) fn llm<'a>(
        &self,
        step: &str,
        prompt: impl Into<Prompt>,
        temperature: f64,
        reply: impl Into<Reply<'a>>,
    ) -> Request {
        self.llm_sample(step, prompt, temperature, 0, reply)
    }

    /// `template` rendered for this run: its structured variant (examples in JSON, the reply's
    /// shape shown) when replies are structured and it has one.
    pub fn render(&self, template: Template, values: &[(&str, &str)]) -> Prompt {
        self.prompts.render_for(template, values, self.settings.structured)
    }

    /// `template` rendered as free text whatever the reply mode: for a step that reasons
    /// before it answers (its answer is read, or extracted, from the text).
    pub fn render_text(&self, template: Template, values: &[(&str, &str)]) -> Prompt {
        self.prompts.render_for(template, values, false)
    }

    /// Sample `sample` of a call made several times on purpose (self-consistency).
    ///
    /// With structured replies, a call of a shape that reasons first ([`Reply::reasons_first`])
    /// is asked as free text and carries the extraction that reads a reply it cannot read as
    /// it is; any other is asked as JSON of its shape, shown in the prompt.
    pub(crate) fn llm_sample<'a>(
        &self,
        step: &str,
        prompt: impl Into<Prompt>,
        temperature: f64,
        sample: u32,
        reply: impl Into<Reply<'a>>,
    ) -> Request {
        let (prompt, shape) = (prompt.into(), reply.into());
        let (system, mut text) = self.shared_layout(&prompt).unwrap_or_else(|| {
            // Outside the shared prefix: the plain system prompt.
            (self.prompts.render(super::templates::SYSTEM, &[]).trim().to_string(), prompt.text.clone())
        });
        let shows_shape = prompt.shows_shape;
        let (schema, extract) = match self.settings.structured {
            false => (None, None),
            true if shape.reasons_first() && self.reasons_then_formats() => {
                (None, Some(Box::new(self.extraction(&shape.extracted()))))
            }
            true => {
                if !shows_shape {
                    text.push_str(&shape.instruction());
                }
                (Some(shape.reply_schema()), None)
            }
        };
        Request::Llm(ChatRequest {
            step: step.into(),
            system,
            prompt: text,
            temperature,
            max_tokens: self.settings.max_tokens,
            sample,
            schema,
            extract,
        })
    }

    /// Whether reason-first steps are asked as free text and extracted: with structured
    /// replies and prompts that have structured variants (a session saved before these were
    /// asked as JSON, and replays so).
    pub(crate) fn reasons_then_formats(&self) -> bool {
        self.settings.structured && self.prompts.has_structured_variants()
    }

    /// The second call of a reason-first request: the extraction prompt around the free reply,
    /// asking for `shape`.
    fn extraction(&self, shape: &Reply<'_>) -> Extraction {
        const SLOT: &str = "\u{0}reply\u{0}";
        let text = self.prompts.render(super::templates::EXTRACT, &[("question", &self.question), ("reply", SLOT)]);
        let (before, after) = text.split_once(SLOT).unwrap_or((&text, ""));
        Extraction {
            schema: shape.reply_schema(),
            before: before.to_string(),
            after: format!("{after}{}", shape.instruction()),
        }
    }

    /// A call whose reply is read as an answer: `{name}` in free text, or JSON of the answer
    /// shape in structured mode (read back into braces before the method sees it).
    pub fn ask_for_answer(&self, step: &str, prompt: String) -> Request {
        self.llm(step, prompt, self.settings.reason_temperature, &ANSWER)
    }

    /// The answer from the model's own knowledge, reasoned first (ToG's and GoG's fallback at
    /// the depth or step limit).
    pub fn ask_own_knowledge(&self) -> Request {
        let prompt = self.render_text(super::templates::ANSWER_OWN_KNOWLEDGE, &[("question", &self.question)]);
        self.llm("answer_own_knowledge", prompt, self.settings.reason_temperature, &REASONED_ANSWER)
    }

    /// A call whose reply takes a shape the method defined (listed in its registry entry), for
    /// what the call offers (`&SHAPE` when it offers nothing): asked for as JSON of that shape
    /// in structured mode, the shape shown unless the prompt (a structured variant) shows it
    /// already. The method reads the reply as its shape reads it, or the model's free text
    /// when the reply did not fit.
    pub fn ask<'a>(&self, step: &str, prompt: impl Into<Prompt>, reply: impl Into<Reply<'a>>) -> Request {
        self.llm(step, prompt, self.settings.reason_temperature, reply)
    }

    /// The index the next trace entry will have.
    pub fn next_index(&self) -> usize {
        self.trace.len()
    }
    pub fn question(&self) -> &str {
        &self.question
    }
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }
    pub fn graph_name(&self) -> &str {
        &self.graph_name
    }
    pub fn beam(&self) -> &Beam {
        &self.beam
    }
    pub fn beam_mut(&mut self) -> &mut Beam {
        &mut self.beam
    }
    /// The run's seeded randomness: the same seed, the same draws.
    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }
    /// Ends the run with `answer`.
    pub fn finish(&mut self, answer: Answer) {
        self.answer = Some(answer);
    }
}

/// A context for a method's unit tests: default settings and the built-in prompts.
#[cfg(test)]
pub(crate) fn test_context(question: &str, settings: Settings) -> Context {
    use rand::SeedableRng;
    Context {
        question: question.into(),
        rng: ChaCha8Rng::seed_from_u64(settings.seed),
        settings,
        prompts: Arc::new(super::builtin_prompts()),
        profile: KgProfile::default(),
        graph_name: "test".into(),
        beam: Beam::default(),
        costs: Costs::default(),
        trace: Vec::new(),
        answer: None,
        shared_prefix: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::methods::tog::templates::{REASONING, RELATION_PRUNE, rendered_by};

    fn chat(request: Request) -> ChatRequest {
        match request {
            Request::Llm(chat) => chat,
            other => panic!("not a call: {other:?}"),
        }
    }

    /// A relation-scoring call and a judgment, as a ToG run of `cx`'s settings asks them.
    fn two_kinds(cx: &Context) -> (ChatRequest, ChatRequest) {
        let relations = vec!["spouse".to_string(), "nationality".to_string()];
        let values = [
            ("width", "3"),
            ("question", cx.question()),
            ("topic_entity", "Ada"),
            ("relations", "spouse; nationality"),
        ];
        let prune = cx.llm(
            "relation_prune",
            cx.render(RELATION_PRUNE, &values),
            0.4,
            crate::engine::methods::tog::shapes::relations(&relations, 3),
        );
        let options = vec!["Byron".to_string()];
        let judge = cx.llm(
            "reasoning",
            cx.render(REASONING, &[("question", cx.question()), ("triples", "Ada, spouse, Byron")]),
            0.0,
            crate::engine::structured::judgment(&options),
        );
        (chat(prune), chat(judge))
    }

    fn context(layout: PromptLayout, question: &str) -> Context {
        let settings = Settings { structured: true, prompt_layout: layout, ..Settings::default() };
        let mut cx = test_context(question, settings);
        cx.share_prefix(&rendered_by(&cx.settings.clone(), false));
        cx
    }

    /// Issue 34: under the shared-prefix layout every call of a run opens with the same system
    /// message, holding every kind's instructions and examples, so a server that keeps only
    /// the previous prompt's prefix evaluates just each call's own paragraph.
    #[test]
    fn a_shared_prefix_is_the_same_system_message_for_every_kind_of_call() {
        let question = "Whom did Ada marry?";
        let (prune, judge) = two_kinds(&context(PromptLayout::SharedPrefix, question));
        assert_eq!(prune.system, judge.system);
        let (per_prune, per_judge) = two_kinds(&context(PromptLayout::PerCall, question));
        // The same instructions and examples, moved: each per-call prompt's fixed part is in
        // the shared system message, and the call's own paragraph follows its task's name.
        for (shared, per_call, task) in [(&prune, &per_prune, "relation_prune"), (&judge, &per_judge, "reasoning")] {
            let (fixed, call) = per_call.prompt.rsplit_once("\n\nQ: ").unwrap();
            assert!(shared.system.contains(&format!("Task: {task}\n{fixed}")), "{task}: {}", shared.system);
            assert_eq!(shared.prompt, format!("Task: {task}\nQ: {call}"));
            assert_eq!(shared.schema, per_call.schema, "{task}: the same reply asked for");
            assert_eq!(per_call.system, "You are an AI assistant that helps people find information.");
        }
        assert!(prune.system.starts_with(&per_prune.system));
        // The beam width, a run constant, is written into the shared relation instructions.
        assert!(prune.system.contains("Please retrieve 3 relations"), "{}", prune.system);
    }

    /// The call's own paragraph is found in the template, never in what was filled in: a
    /// question holding a blank line stays whole in the user message.
    #[test]
    fn a_blank_line_in_a_question_does_not_move_the_split() {
        let question = "Whom did Ada\n\nQ: marry?";
        let (prune, _) = two_kinds(&context(PromptLayout::SharedPrefix, question));
        assert!(
            prune.prompt.starts_with(&format!("Task: relation_prune\nQ: {question}\nTopic Entity: Ada")),
            "{}",
            prune.prompt
        );
        assert!(!prune.system.contains("marry"), "{}", prune.system);
    }

    /// A template whose fixed part would differ from the one shared (another beam width than
    /// the run's) keeps the per-call layout rather than contradict the system message.
    #[test]
    fn a_prompt_that_does_not_match_its_shared_part_keeps_the_per_call_layout() {
        let cx = context(PromptLayout::SharedPrefix, "Whom did Ada marry?");
        let values = [("width", "7"), ("question", "q"), ("topic_entity", "Ada"), ("relations", "spouse")];
        let relations = vec!["spouse".to_string()];
        let request = chat(cx.llm(
            "relation_prune",
            cx.render(RELATION_PRUNE, &values),
            0.4,
            crate::engine::methods::tog::shapes::relations(&relations, 7),
        ));
        assert!(request.prompt.starts_with("Please retrieve 7 relations"), "{}", request.prompt);
        assert_eq!(request.system, "You are an AI assistant that helps people find information.");
    }
}
