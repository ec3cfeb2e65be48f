//! A method defined outside the engine: a breadth-first walk that asks the model only for the
//! final answer. Everything about it is here: its prompt template, its reply shape, its view in
//! the UI, its simulated replies for `eval --llm gold-path`, and the one registry line that
//! adds it. `custom_method.rs` drives it through the engine; `custom_method_program.rs` runs it
//! in a program of its own (`ongraph::main_with`).
#![allow(dead_code)]

use ongraph::engine::beam::{NodeId, NodeKind, Provenance};
use ongraph::engine::events::{CallRecord, Event, LookupRecord};
use ongraph::engine::simulate::{GoldPath, Shown, Simulation, braced_or_unknown};
use ongraph::engine::{
    Answer, AnswerSource, Context, EngineError, Machine, Method, MethodEntry, MethodView, Offer, PathView, Registry,
    Reply, ReplyShape, Request, Response, TopicLinker, Topics, ViewItem, ViewLine,
};
use ongraph::prompts::{Template, TemplateDef};
use serde_json::{Value, json};

/// The method's own prompt: the triples found, numbered, and the question.
pub const BFS_ANSWER: Template = Template::new(&TemplateDef {
    name: "bfs_answer",
    step: "answering from the breadth-first triples",
    placeholders: &["question", "triples"],
    reply: Some("bfs_answer"),
    text: "Numbered triples:\n{{triples}}\nQuestion: {{question}}\nAnswer in braces.",
    json_text: None,
});

/// Its own reply shape: the answer, and the number of the triple that gives it, one of the
/// numbers the call offers. Read back as its JSON text.
pub const BFS_REPLY: ReplyShape = ReplyShape::json(
    "bfs_answer",
    |offer| {
        let numbers: Vec<usize> = (1..=offer.count.max(1)).collect();
        json!({"type": "object", "properties": {"answer": {"type": "string"}, "triple": {"enum": numbers}},
               "required": ["answer", "triple"], "additionalProperties": false})
    },
    |_| BFS_SHAPE.into(),
);

/// Its reply's shape as the prompt shows it.
pub const BFS_SHAPE: &str = r#"{"answer": "<the answer>", "triple": <the number of the triple that gives it>}"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Topics,
    Relations,
    Neighbours,
    Answer,
    Done,
}

/// Every relation of every frontier entity, every neighbour through it, `depth` hops; then one
/// call with all the triples found.
#[derive(Clone, Debug)]
pub struct Bfs {
    phase: Phase,
    hop: u32,
    frontier: Vec<NodeId>,
    /// Relation nodes awaiting their neighbours: (node, entity id, relation).
    relations: Vec<(NodeId, String, ongraph::kg::RelationRef)>,
    linker: TopicLinker,
}

impl Bfs {
    fn start(cx: &mut Context, topics: Topics) -> Result<Self, EngineError> {
        // Linking topics is the method's business: the engine's linker does it.
        let linker = TopicLinker::new(cx, topics)?;
        let mut bfs = Self { phase: Phase::Topics, hop: 0, frontier: Vec::new(), relations: Vec::new(), linker };
        bfs.when_linked(cx);
        Ok(bfs)
    }

    /// Once the topics are linked, they are the first frontier.
    fn when_linked(&mut self, cx: &Context) {
        if self.linker.done() {
            self.frontier = cx.beam().roots().map(|n| n.id).collect();
            self.phase = Phase::Relations;
        }
    }

    fn entity(cx: &Context, node: NodeId) -> String {
        cx.beam().nodes[node].term().map(|t| t.as_str().to_string()).unwrap_or_default()
    }
}

impl Method for Bfs {
    /// The nodes the batch's lookups expand, in request order.
    type Plan = Vec<NodeId>;

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, Vec<NodeId>) {
        match self.phase {
            Phase::Topics => (self.linker.requests(cx), Vec::new()),
            Phase::Relations => (
                self.frontier.iter().map(|&n| Request::Relations { entity: Self::entity(cx, n) }).collect(),
                self.frontier.clone(),
            ),
            Phase::Neighbours => (
                self.relations
                    .iter()
                    .map(|(_, entity, relation)| Request::Neighbours {
                        entity: entity.clone(),
                        relation: relation.clone(),
                    })
                    .collect(),
                self.relations.iter().map(|(n, ..)| *n).collect(),
            ),
            Phase::Answer => {
                let beam = cx.beam();
                let lines: Vec<String> = self
                    .frontier
                    .iter()
                    .flat_map(|&n| beam.triples(n))
                    .enumerate()
                    .map(|(i, t)| format!("{}. {}", i + 1, t.line()))
                    .collect();
                let prompt = cx.render(BFS_ANSWER, &[("question", cx.question()), ("triples", &lines.join("\n"))]);
                let reply = Reply::new(&BFS_REPLY, Offer::numbered(lines.len(), 1));
                (vec![cx.ask("bfs_answer", prompt, reply)], Vec::new())
            }
            Phase::Done => (Vec::new(), Vec::new()),
        }
    }

    fn absorb(
        &mut self,
        cx: &mut Context,
        plan: &Vec<NodeId>,
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError> {
        let mut ev = Event::step(cx.next_index(), self.phase(), self.hop);
        let graph = Provenance::Kg { graph: cx.graph_name().to_string() };
        match (self.phase, responses.as_slice()) {
            (Phase::Topics, _) => {
                self.linker.absorb(cx, requests, &responses, &mut ev)?;
                self.when_linked(cx);
            }
            (Phase::Relations, _) => {
                self.relations.clear();
                for (&node, response) in plan.iter().zip(&responses) {
                    let Response::Relations { relations } = response else { return Err(EngineError::NotPolled) };
                    ev.lookups
                        .push(LookupRecord { what: format!("relations of node {node}"), results: relations.len() });
                    for r in relations {
                        let kind = NodeKind::Relation {
                            relation: r.relation.clone(),
                            direction: r.direction,
                            shown: r.relation.clone(),
                        };
                        let rel = cx.beam_mut().add(Some(node), kind, graph.clone());
                        self.relations.push((rel, Self::entity(cx, node), r.clone()));
                    }
                }
                ev.summary = format!("{} relations", self.relations.len());
                self.phase = Phase::Neighbours;
            }
            (Phase::Neighbours, _) => {
                self.frontier.clear();
                for (&rel, response) in plan.iter().zip(&responses) {
                    let Response::Neighbours { neighbours } = response else { return Err(EngineError::NotPolled) };
                    for nb in neighbours {
                        let kind = NodeKind::Entity { term: nb.term.clone(), label: nb.label.clone() };
                        self.frontier.push(cx.beam_mut().add(Some(rel), kind, graph.clone()));
                    }
                }
                self.hop += 1;
                ev.summary = format!("hop {}: {} entities", self.hop, self.frontier.len());
                self.phase = if self.hop >= cx.settings().depth { Phase::Answer } else { Phase::Relations };
            }
            (Phase::Answer, [Response::Llm { completion }]) => {
                // Its own shape's JSON text when the reply fitted it; the model's free text else.
                let (answers, because) = match serde_json::from_str::<Value>(&completion.text) {
                    Ok(reply) => (
                        reply["answer"].as_str().map(|a| vec![a.to_string()]).unwrap_or_default(),
                        format!(" (triple {})", reply["triple"]),
                    ),
                    Err(_) => (ongraph::engine::parse_answers(&completion.text).unwrap_or_default(), String::new()),
                };
                ev.calls.push(CallRecord::of(&requests[0], completion, answers.join("; ")));
                ev.summary = format!("answer {}{because}", answers.join(", "));
                // Listed worst first, each path scored by its place: the run lists them best first.
                let beam = cx.beam();
                let paths = self
                    .frontier
                    .iter()
                    .enumerate()
                    .map(|(i, &leaf)| PathView {
                        leaf,
                        text: beam.path_text(leaf),
                        score: (i + 1) as f64 / 10.0,
                        triples: beam.triples(leaf),
                    })
                    .collect();
                cx.finish(Answer {
                    answers,
                    source: AnswerSource::KgPaths,
                    reply: completion.text.clone(),
                    paths,
                    why: None,
                });
                self.phase = Phase::Done;
            }
            _ => return Err(EngineError::Finished),
        }
        Ok(ev)
    }

    fn phase(&self) -> &'static str {
        match self.phase {
            Phase::Topics => self.linker.phase_name(),
            Phase::Relations => "relations",
            Phase::Neighbours => "neighbours",
            Phase::Answer => "answer",
            Phase::Done => "done",
        }
    }

    fn depth(&self) -> u32 {
        self.hop
    }

    /// Its own pane: the entities reached at the last hop, each with its path.
    fn view(&self, cx: &Context) -> MethodView {
        let beam = cx.beam();
        MethodView {
            title: VIEW_TITLE.into(),
            report: vec![ViewLine::labelled("hop ", format!("{} of {}", self.hop, cx.settings().depth))],
            items: self
                .frontier
                .iter()
                .map(|&n| ViewItem { row: beam.path_text(n), node: Some(n), ..ViewItem::default() })
                .collect(),
            empty: "No entity reached yet.".into(),
            edits_steps: false,
        }
    }
}

/// What its pane is called.
pub const VIEW_TITLE: &str = "BFS: every entity within reach";

/// How a model that knows the gold path and reads only the prompt answers: the gold answer the
/// numbered triples chain the topic to, or `{unknown}`.
fn simulated_answer(shown: &Shown<'_>, gold: &GoldPath) -> String {
    // `1. head, relation, tail`: the triples stand before the question.
    let lines: Vec<&str> = shown.prompt.lines().filter_map(|l| l.split_once(". ").map(|(_, triple)| triple)).collect();
    braced_or_unknown(&gold.chained(&gold.triple_lines(&lines.join("\n"))))
}

pub const ENTRY: MethodEntry = MethodEntry {
    id: "bfs",
    label: "BFS",
    about: "breadth-first walk; the model only answers",
    progress: ongraph::engine::depth_progress,
    start: |cx, topics| Ok(Machine::new(Bfs::start(cx, topics)?)),
    templates: &[BFS_ANSWER],
    shapes: &[BFS_REPLY],
    simulations: &[Simulation { template: "bfs_answer", reply: simulated_answer }],
};

/// The one line that registers it.
pub fn registry() -> Registry {
    Registry::builtin().clone().with(ENTRY).expect("its template and shape are its own")
}
