//! The state every method shares (question, settings, prompts, beam, seeded randomness, costs,
//! trace, answer) and how a method asks the model through it.

use super::beam::Beam;
use super::events::{Costs, Event};
use super::structured::{ReplyShape, Shape};
use super::{Answer, Request, Settings};
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
}

impl Context {
    /// A call whose reply takes `shape` (asked for as JSON in structured mode).
    pub(crate) fn llm(&self, step: &str, prompt: impl Into<Prompt>, temperature: f64, shape: Shape<'_>) -> Request {
        self.llm_sample(step, prompt, temperature, 0, shape)
    }

    /// `template` rendered for this run: its structured variant (examples in JSON, the reply's
    /// shape shown) when replies are structured and it has one.
    pub fn render(&self, template: Template, values: &[(&str, &str)]) -> Prompt {
        self.prompts.render_for(template, values, self.settings.structured)
    }

    /// Sample `sample` of a call made several times on purpose (self-consistency).
    ///
    /// With structured replies, a call of a shape that reasons first ([`Shape::reasons_first`])
    /// is asked as free text and carries the extraction that reads a reply it cannot read as
    /// it is; any other is asked as JSON of its shape, shown in the prompt.
    pub(crate) fn llm_sample(
        &self,
        step: &str,
        prompt: impl Into<Prompt>,
        temperature: f64,
        sample: u32,
        shape: Shape<'_>,
    ) -> Request {
        let Prompt { mut text, shows_shape } = prompt.into();
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
            system: self.prompts.render(super::templates::SYSTEM, &[]).trim().to_string(),
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
    fn extraction(&self, shape: &Shape<'_>) -> Extraction {
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
        self.llm(step, prompt, self.settings.reason_temperature, Shape::Answer)
    }

    /// A call whose reply takes a shape the method defined (listed in its registry entry):
    /// asked for as JSON of that shape in structured mode, the shape shown unless the prompt
    /// (a structured variant) shows it already. The method reads the reply's JSON text, or the
    /// model's free text when the reply did not fit.
    pub fn ask(&self, step: &str, prompt: impl Into<Prompt>, shape: &ReplyShape) -> Request {
        self.llm(step, prompt, self.settings.reason_temperature, Shape::Own(shape))
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
    }
}
