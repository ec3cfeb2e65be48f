//! A scripted model for tests and the offline demo: replies are read from a TOML file and chosen
//! by the engine step and by substrings of the prompt. A prompt with no matching reply is an
//! error naming the step and the start of the prompt, never a silent default; the offline demo
//! says instead, in words, that the step is outside its recording and how to connect a model.
//!
//! ```toml
//! [[question]]                            # optional: a question the script knows, and how
//! text = "Who founded Apple?"             # else it may be worded; the prompt's question is
//! also = ["who started apple"]            # matched by normalised text (case, punctuation,
//!                                         # spacing) and read as `text`
//! [[reply]]
//! step = "relation_prune"                 # optional: the engine step that asks
//! contains = ["Topic Entity: Canberra"]   # all must occur in the prompt
//! sample = 2                             # optional: only this self-consistency sample
//! text = "{location.location.containedby (Score: 0.8)} ..."
//! ```

use super::{ChatRequest, Completion, LanguageModel, LlmError, Usage, estimate_tokens};
use async_trait::async_trait;
use serde::Deserialize;
use std::path::Path;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedReply {
    #[serde(default)]
    pub step: Option<String>,
    #[serde(default)]
    pub contains: Vec<String>,
    /// Only for this sample of a self-consistency run (0-based).
    #[serde(default)]
    pub sample: Option<u32>,
    pub text: String,
}

/// A question the script has replies for, and other wordings of it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedQuestion {
    pub text: String,
    #[serde(default)]
    pub also: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    #[serde(default)]
    question: Vec<ScriptedQuestion>,
    #[serde(default)]
    reply: Vec<ScriptedReply>,
}

#[derive(Clone, Debug)]
pub struct ScriptedModel {
    source: String,
    questions: Vec<ScriptedQuestion>,
    replies: Vec<ScriptedReply>,
    /// The offline demo: off its script it says so in one line and points to a real model, to
    /// be configured in this file (the config the user's command reads).
    demo: Option<String>,
    /// What a step's calls do, in words, for its messages (the program's templates know; the
    /// model sees only the step's name).
    step_words: fn(&str) -> String,
}

/// A step's name in words when nobody said better: `entity_prune` → `entity prune`.
fn step_name_in_words(step: &str) -> String {
    step.replace('_', " ")
}

/// A question as compared: lower case, punctuation and runs of spaces as one space.
fn normalise_question(q: &str) -> String {
    let spaced: String = q.chars().map(|c| if c.is_alphanumeric() { c.to_ascii_lowercase() } else { ' ' }).collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where the question a prompt asks stands: its last `Q: ` or `Question: ` line (exemplars come
/// before it), as the byte range of the question text.
fn question_span(prompt: &str) -> Option<(usize, usize)> {
    let start = ["\nQ: ", "\nQuestion: "]
        .iter()
        .filter_map(|m| prompt.rfind(m).map(|at| at + m.len()))
        .max()
        .or_else(|| ["Q: ", "Question: "].iter().find_map(|m| prompt.strip_prefix(m).map(|_| m.len())))?;
    let end = prompt[start..].find('\n').map_or(prompt.len(), |e| start + e);
    Some((start, end))
}

impl ScriptedModel {
    pub fn new(source: impl Into<String>, replies: Vec<ScriptedReply>) -> Self {
        Self { source: source.into(), questions: Vec::new(), replies, demo: None, step_words: step_name_in_words }
    }

    pub fn from_toml(source: impl Into<String>, text: &str) -> Result<Self, LlmError> {
        let source = source.into();
        let file: ScriptFile =
            toml::from_str(text).map_err(|e| LlmError::Config(format!("{source}: {}", e.to_string().trim())))?;
        Ok(Self { questions: file.question, ..Self::new(source, file.reply) })
    }

    /// The prompt as the script's `contains` lists see it: a question the script knows, however
    /// it was worded (case, punctuation, spacing, or a listed other wording), reads as the
    /// script writes it.
    fn as_scripted<'a>(&self, prompt: &'a str) -> std::borrow::Cow<'a, str> {
        match self.known_question(prompt) {
            Some((q, start, end)) if q.text != prompt[start..end] => {
                format!("{}{}{}", &prompt[..start], q.text, &prompt[end..]).into()
            }
            _ => prompt.into(),
        }
    }

    /// The listed question a prompt asks (however it is worded), with where the prompt asks it.
    fn known_question(&self, prompt: &str) -> Option<(&ScriptedQuestion, usize, usize)> {
        let (start, end) = question_span(prompt)?;
        let asked = normalise_question(&prompt[start..end]);
        let known = self
            .questions
            .iter()
            .find(|q| std::iter::once(&q.text).chain(&q.also).any(|wording| normalise_question(wording) == asked))?;
        Some((known, start, end))
    }

    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        let text = crate::text_file::read(path)
            .map_err(|e| LlmError::Config(format!("cannot read the script {}: {e}", path.display())))?;
        Self::from_toml(path.display().to_string(), &text)
    }

    /// The demo script compiled into the binary (`sessions/demo-model.toml`).
    pub fn demo() -> Result<Self, LlmError> {
        let model = Self::from_toml("sessions/demo-model.toml", include_str!("../../sessions/demo-model.toml"))?;
        Ok(Self { demo: Some(super::connect_a_model("the config file (--config FILE)", &[])), ..model })
    }

    /// Says a step in messages as `step_words` does (the program's templates' words).
    pub fn saying_steps_as(self, step_words: fn(&str) -> String) -> Self {
        Self { step_words, ..self }
    }

    /// Names the config file where, off its recording, the demo tells the user to connect a
    /// model, and the endpoints it names already (the caller knows which file its command
    /// reads).
    pub fn advising_config(self, config: &Path, configured: &[&str]) -> Self {
        let advice = super::connect_a_model(&config.display().to_string(), configured);
        Self { demo: self.demo.map(|_| advice), ..self }
    }

    pub fn reply_for(&self, request: &ChatRequest) -> Option<&ScriptedReply> {
        let prompt = self.as_scripted(&request.prompt);
        self.replies.iter().find(|r| {
            r.step.as_deref().is_none_or(|s| s == request.step)
                && r.sample.is_none_or(|n| n == request.sample)
                && r.contains.iter().all(|c| prompt.contains(c.as_str()))
        })
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn describe(&self) -> String {
        format!("scripted model ({})", self.source)
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let Some(reply) = self.reply_for(request) else {
            if let Some(advice) = &self.demo {
                let advice = advice.clone();
                if self.known_question(&request.prompt).is_some() {
                    return Err(LlmError::OffScript {
                        step: request.step.clone(),
                        advice,
                        method: None,
                        words: (self.step_words)(&request.step),
                    });
                }
                let known: Vec<String> = self.questions.iter().map(|q| format!("\"{}\"", q.text)).collect();
                // A step it records for no question (the baselines'): its questions are not all.
                let recorded = self.replies.iter().any(|r| r.step.as_deref().is_none_or(|s| s == request.step));
                let unrecorded = (!recorded).then(|| (self.step_words)(&request.step));
                return Err(LlmError::NotInDemo { known: known.join(", "), advice, unrecorded, method: None });
            }
            // The variable part of a prompt is at its end (after the exemplars).
            let tail: String = {
                let chars: Vec<char> = request.prompt.chars().collect();
                chars[chars.len().saturating_sub(160)..].iter().collect()
            };
            return Err(LlmError::NoScriptedReply {
                step: request.step.clone(),
                excerpt: tail.trim().to_string(),
                file: self.source.clone(),
                method: None,
            });
        };
        Ok(Completion {
            text: reply.text.clone(),
            reasoning: None,
            usage: Usage {
                prompt_tokens: estimate_tokens(&request.system) + estimate_tokens(&request.prompt),
                completion_tokens: estimate_tokens(&reply.text),
                ..Usage::default()
            },
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(step: &str, prompt: &str) -> ChatRequest {
        ChatRequest { step: step.into(), prompt: prompt.into(), ..ChatRequest::default() }
    }

    /// Off its recording the demo says, in words, which case it is and how to connect a model;
    /// it never shows a prompt's tail.
    #[tokio::test]
    async fn the_demo_off_its_recording_says_so_and_how_to_connect_a_model() {
        let config = Path::new("/home/ada/.config/ongraph/config.toml");
        let demo = ScriptedModel::demo().expect("the demo script parses").advising_config(config, &[]);
        let steered = ask(
            "entity_prune",
            "Q: What is the majority party now in the country where Canberra is located?\nRelation: x\nEntities: a; b\nScore:",
        );
        let err = demo.complete(&steered).await.unwrap_err();
        assert!(err.to_string().starts_with("this step (entity prune) is outside"), "no words said: {err}");
        // Said as the program's templates say it.
        let words = |step: &str| if step == "entity_prune" { "scoring the entities".into() } else { step.into() };
        let demo = demo.saying_steps_as(words);
        let err = demo.complete(&steered).await.unwrap_err().to_string();
        assert!(
            err.starts_with("this step (scoring the entities) is outside the offline demo's recording"),
            "the step in words, not its id: {err}"
        );
        assert!(err.contains(" to /home/ada/.config/ongraph/config.toml "), "names the config to edit: {err}");
        assert!(err.contains("--llm local") && err.contains("base_url") && err.contains("llama-server"), "{err}");
        assert!(!err.contains("Relation: x"), "no prompt text: {err}");

        let other = ask("topic_entities", "Q: Who is the CEO of Apple?\nA:");
        let err = demo.complete(&other).await.unwrap_err().to_string();
        assert!(err.starts_with("the offline demo model knows only its recorded steps"), "{err}");
        assert!(err.contains("What is the majority party now") && err.contains("--llm local"), "{err}");
        // A step it records for no question, said in its words when no method was named.
        let unrecorded = ask("io", "Q: Who is the CEO of Apple?\nA:");
        let err = demo.saying_steps_as(|_| "answering alone".into()).complete(&unrecorded).await.unwrap_err();
        assert!(err.to_string().contains(", but not at this step (answering alone), which it records"), "{err}");

        // With endpoints configured already, it names them first.
        let configured = ScriptedModel::demo().expect("the demo script parses").advising_config(config, &["qwen"]);
        let err = configured.complete(&other).await.unwrap_err().to_string();
        assert!(err.contains("To go on, run with --llm qwen (configured in /home/ada/.config/ongraph/config.toml), or connect another model: add [llm.local]"), "{err}");
        // Never a table the file has already: TOML would refuse it.
        let taken = ScriptedModel::demo().expect("the demo script parses").advising_config(config, &["local"]);
        let err = taken.complete(&other).await.unwrap_err().to_string();
        assert!(
            err.contains("run with --llm local (configured in")
                && err.contains("add [llm.local-2]")
                && err.contains("then run with --llm local-2"),
            "{err}"
        );

        // A script of one's own names the file to add the reply to, with the prompt's end.
        let own = ScriptedModel::from_toml("mine.toml", "").unwrap();
        let err = own.complete(&steered).await.unwrap_err().to_string();
        assert!(err.contains("add one to mine.toml") && err.contains("Entities: a; b"), "{err}");
    }
}
