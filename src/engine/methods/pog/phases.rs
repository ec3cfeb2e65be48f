//! PoG's step handlers for the phases whose results take more than a line: what
//! a phase's results do to the run and which phase comes next.

use super::*;

impl PogMachine {
    /// On the relations around the nodes being expanded, for the question subgraph or a node's
    /// expansion.
    pub(super) fn on_expand_relations(
        &mut self,
        cx: &mut Context,
        lookup: Lookup,
        plan: &PogPlan,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let nodes = &plan.nodes;
        self.found.clear();
        let mut total = 0;
        for (i, &n) in nodes.iter().enumerate() {
            let rels = relations(responses, i)?;
            ev.lookups.push(LookupRecord { what: format!("relations of {}", self.node_name(n)), results: rels.len() });
            total += rels.len();
            Arc::make_mut(&mut self.sg).nodes[n].searched = true;
            if !rels.is_empty() {
                self.found.push((n, rels));
            }
        }
        ev.summary = format!(
            "{total} relation{} around {} entit{}",
            plural_s(total),
            nodes.len(),
            if nodes.len() == 1 { "y" } else { "ies" }
        );
        self.phase = Phase::ExpandNeighbours(lookup);
        if self.found.is_empty() {
            self.after_expansion(cx, lookup, ev);
        }

        Ok(())
    }

    /// On the neighbours through those relations: the subgraph or the expansion grows.
    pub(super) fn on_expand_neighbours(
        &mut self,
        cx: &mut Context,
        lookup: Lookup,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let found = std::mem::take(&mut self.found);
        let mut i = 0;
        let before = (self.sg.nodes.len(), self.sg.triples);
        for (n, rels) in found {
            let hop = self.sg.nodes[n].hop + 1;
            for r in rels {
                let mut got = neighbours(responses, i)?;
                i += 1;
                ev.lookups.push(LookupRecord {
                    what: format!("{} {} {}", self.node_name(n), r.direction.arrow(), r.relation),
                    results: got.len(),
                });
                if got.len() > cx.settings.sample_threshold {
                    let keep = sample_indices(&mut cx.rng, got.len(), cx.settings.sample_threshold);
                    ev.notes.push(format!(
                        "{} {}: {} neighbours, {} sampled (seeded)",
                        self.node_name(n),
                        r.relation,
                        got.len(),
                        keep.len()
                    ));
                    got = keep.into_iter().map(|k| got[k].clone()).collect();
                }
                for nb in got {
                    if self.sg.nodes.len() >= MAX_SUBGRAPH_NODES {
                        break;
                    }
                    let label = nb.label.clone().or_else(|| match &nb.term {
                        Term::Literal(v) => Some(v.clone()),
                        Term::Entity(_) => None,
                    });
                    let sg = Arc::make_mut(&mut self.sg);
                    let m = sg.node(&nb.term, label.as_deref(), hop);
                    sg.link(n, &r.relation, r.direction, m);
                    if let Some(id) = nb.correction {
                        sg.corrected_by(n, &r.relation, r.direction, m, id);
                    }
                }
            }
        }
        if self.sg.nodes.len() >= MAX_SUBGRAPH_NODES {
            ev.notes.push(format!("the subgraph reached {MAX_SUBGRAPH_NODES} nodes; expansion stopped"));
        }
        if lookup == Lookup::Subgraph {
            self.report.subgraph = (self.sg.nodes.len(), self.sg.triples);
        }
        ev.summary = format!(
            "subgraph: +{} nodes, +{} triples ({} nodes, {} triples)",
            self.sg.nodes.len() - before.0,
            self.sg.triples - before.1,
            self.sg.nodes.len(),
            self.sg.triples
        );
        self.after_expansion(cx, lookup, ev);

        Ok(())
    }

    /// On the subgraph reduced.
    pub(super) fn on_reduce(&mut self, cx: &mut Context, ev: &mut Event) -> Result<(), EngineError> {
        let r = Arc::make_mut(&mut self.sg).reduce(&self.topics, REDUCTION_SLACK);
        ev.summary = format!("subgraph reduced from {} to {} nodes", r.before, r.after);
        if !r.connected {
            ev.notes.push(format!(
                "the topic entities do not connect within {} hops; the subgraph is not reduced",
                cx.settings.depth
            ));
        }
        self.keep = r.keep;
        self.connected = r.connected && self.topics.len() > 1;
        self.report.reduced = Some((r.before, r.after));
        self.report.connected = self.connected;
        self.stage = Stage::TopicPaths(self.predicted);
        self.gather(cx, ev);

        Ok(())
    }

    /// On the path summary.
    pub(super) fn on_summary(
        &mut self,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        self.summary = parse::parse_summary(&c.text);
        self.report.summary = self.summary.clone();
        ev.calls.push(record(&requests[0], c, format!("{} line(s)", self.summary.len())));
        if self.summary.is_empty() {
            unreadable(ev);
            ev.notes.push("the summary reply is empty; the sufficiency check reads the paths alone".into());
        }
        ev.summary = format!("summarised {} path{}", self.pool.len(), plural_s(self.pool.len()));
        self.phase = Phase::Sufficiency;

        Ok(())
    }

    /// On the sufficiency judgment: answer, expand further or supplement.
    pub(super) fn on_sufficiency(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        let (verdict, yes, answers) = match parse::parse_sufficiency(&c.text) {
            Ok((yes, answers)) => (Some(yes), yes, answers),
            Err(why) => {
                ev.notes.push(format!("{why}; taken as No"));
                (None, false, Vec::new())
            }
        };
        let (yes, answers, parsed) = judged(&requests[0], yes, answers, "the paths", &mut ev.notes);
        ev.calls.push(record(&requests[0], c, parsed));
        if verdict.is_none() {
            unreadable(ev);
        }
        self.last_verdict = Some(yes);
        self.selected = self.pool.clone();
        if let Some(s) = self.report.stages.last_mut() {
            s.sufficient = Some(yes);
        }
        let stage = self.stage.name();
        if yes && !answers.is_empty() {
            ev.summary = format!("{stage}: sufficient; answer {}", answers.join(", "));
            self.finish(cx, answers, c.text.clone(), AnswerSource::KgPaths);
        } else if yes {
            ev.summary = format!("{stage}: sufficient; asking for the answer");
            self.phase = Phase::Answer(AnswerSource::KgPaths);
        } else {
            ev.summary = format!("{stage}: not sufficient");
            self.next_stage(cx, ev);
        }

        Ok(())
    }

    /// On the supplement: the paths the judgment asked for.
    pub(super) fn on_supplement(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        let names = parse::parse_supplement(&c.text);
        let matched = self.match_names(&names);
        ev.calls.push(record(&requests[0], c, names.join("; ")));
        if names.is_empty() {
            unreadable(ev);
            ev.notes.push("the reply names no candidate entity".into());
        }
        ev.summary = format!(
            "the model predicted {} entit{}; {} matched in the subgraph",
            names.len(),
            if names.len() == 1 { "y" } else { "ies" },
            matched.len()
        );
        self.supplement_paths(cx, &matched, ev);

        Ok(())
    }
}
