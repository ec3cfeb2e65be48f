//! A scripted model for tests and the offline demo: replies are read from a TOML file and chosen
//! by the engine step and by substrings of the prompt. A prompt with no matching reply is an
//! error naming the step and the start of the prompt, never a silent default.
//!
//! ```toml
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
use std::time::Duration;

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

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    #[serde(default)]
    reply: Vec<ScriptedReply>,
}

#[derive(Clone, Debug)]
pub struct ScriptedModel {
    source: String,
    replies: Vec<ScriptedReply>,
    latency: Duration,
}

impl ScriptedModel {
    pub fn new(source: impl Into<String>, replies: Vec<ScriptedReply>) -> Self {
        Self { source: source.into(), replies, latency: Duration::ZERO }
    }

    pub fn from_toml(source: impl Into<String>, text: &str) -> Result<Self, LlmError> {
        let source = source.into();
        let file: ScriptFile =
            toml::from_str(text).map_err(|e| LlmError::Config(format!("{source}: {}", e.to_string().trim())))?;
        Ok(Self::new(source, file.reply))
    }

    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::Config(format!("cannot read the script {}: {e}", path.display())))?;
        Self::from_toml(path.display().to_string(), &text)
    }

    /// The demo script compiled into the binary (`sessions/demo-model.toml`).
    pub fn demo() -> Result<Self, LlmError> {
        Self::from_toml("sessions/demo-model.toml", include_str!("../../sessions/demo-model.toml"))
    }

    /// Simulated latency per call, for benchmarks.
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    pub fn reply_for(&self, request: &ChatRequest) -> Option<&ScriptedReply> {
        self.replies.iter().find(|r| {
            r.step.as_deref().is_none_or(|s| s == request.step)
                && r.sample.is_none_or(|n| n == request.sample)
                && r.contains.iter().all(|c| request.prompt.contains(c.as_str()))
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
            // The variable part of a prompt is at its end (after the exemplars).
            let tail: String = {
                let chars: Vec<char> = request.prompt.chars().collect();
                chars[chars.len().saturating_sub(160)..].iter().collect()
            };
            return Err(LlmError::NoScriptedReply {
                step: request.step.clone(),
                excerpt: tail.trim().to_string(),
                file: self.source.clone(),
            });
        };
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        Ok(Completion {
            text: reply.text.clone(),
            usage: Usage {
                prompt_tokens: estimate_tokens(&request.system) + estimate_tokens(&request.prompt),
                completion_tokens: estimate_tokens(&reply.text),
            },
            latency_ms: self.latency.as_millis() as u64,
            cached: false,
        })
    }
}
