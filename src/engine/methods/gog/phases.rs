//! GOG's step handlers for the phases whose results take more than a line: what
//! a phase's results do to the run and which phase comes next.

use super::*;

impl GogMachine {
    /// On the entities a Search named, linked to the KG.
    pub(super) fn on_link(
        &mut self,
        cx: &mut Context,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let names = std::mem::take(&mut self.unlinked);
        let mut missing = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let matches = entity_matches(responses, i)?;
            ev.lookups.push(LookupRecord { what: format!("entities named {name:?}"), results: matches.len() });
            match link_model_name(name, matches) {
                Some(m) => {
                    let term = Term::Entity(m.id.clone());
                    self.names.insert(name.to_lowercase(), term.clone());
                    let node = self.entity_node(cx, &term, Some(m.label.clone()));
                    self.targets.push((term, node));
                }
                None => missing.push(name.clone()),
            }
        }
        ev.summary = format!("linked {} of {} name{}", names.len() - missing.len(), names.len(), plural_s(names.len()));
        if !missing.is_empty() {
            ev.notes.push(format!("no KG entity named {}", missing.join(", ")));
        }
        self.after_link(&missing, ev);

        Ok(())
    }

    /// On the relations of the searched entities.
    pub(super) fn on_relations(
        &mut self,
        cx: &mut Context,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        self.found.clear();
        for (i, (term, node)) in self.targets.iter().enumerate() {
            let rels = relations(responses, i)?;
            ev.lookups.push(LookupRecord {
                what: format!("relations of {}", cx.beam.nodes[*node].shown()),
                results: rels.len(),
            });
            self.searched.push(term.clone());
            self.found.push(rels);
        }
        self.chosen =
            self.found.iter().map(|r| if r.len() > RELATIONS_PER_SEARCH { Vec::new() } else { r.clone() }).collect();
        let total: usize = self.found.iter().map(Vec::len).sum();
        ev.summary = format!(
            "{total} relation{} around {} entit{}",
            plural_s(total),
            self.targets.len(),
            if self.targets.len() == 1 { "y" } else { "ies" }
        );
        self.phase = if self.found.iter().any(|r| r.len() > RELATIONS_PER_SEARCH) {
            Phase::Filter
        } else if total == 0 {
            self.observe("No triples found.".into());
            self.phase
        } else {
            Phase::Neighbours
        };

        Ok(())
    }

    /// On the relations the model chose to follow.
    pub(super) fn on_filter(
        &mut self,
        cx: &mut Context,
        plan: &GogPlan,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        for (k, &i) in plan.filtered.iter().enumerate() {
            let rels = &self.found[i];
            let c = completion(responses, k)?;
            let names: Vec<String> = rels.iter().map(relation_name).collect();
            let mut fell_back = false;
            let picks = match parse::parse_relation_choice(&c.text, &names, RELATIONS_PER_SEARCH) {
                Ok(p) => p,
                Err(why) => {
                    fell_back = true;
                    // Said, not silent: the thought's nearest relations stand in.
                    let thought = self.steps.last().map(|s| s.thought.clone()).unwrap_or_default();
                    ev.notes.push(format!("relation filter for {}: {why}; the {RELATIONS_PER_SEARCH} most similar to the thought are used", cx.beam.nodes[self.targets[i].1].shown()));
                    top_k(&thought, &names, RELATIONS_PER_SEARCH)
                }
            };
            ev.calls.push(record(
                &requests[k],
                c,
                picks.iter().map(|&p| names[p].clone()).collect::<Vec<_>>().join(", "),
            ));
            if fell_back {
                unreadable(ev);
            }
            self.chosen[i] = picks.into_iter().map(|p| rels[p].clone()).collect();
        }
        let n: usize = self.chosen.iter().map(Vec::len).sum();
        ev.summary = format!("kept {n} relation{}", plural_s(n));
        self.phase = Phase::Neighbours;

        Ok(())
    }

    /// On the triples the model generated.
    pub(super) fn on_generate(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        self.samples.clear();
        for (i, r) in requests.iter().enumerate() {
            let c = completion(responses, i)?;
            let mut triples = parse::parse_triples(&c.text);
            if triples.len() > MAX_GENERATED {
                ev.notes.push(format!(
                    "sample {} wrote {} triples; the first {MAX_GENERATED} are kept",
                    i + 1,
                    triples.len()
                ));
                triples.truncate(MAX_GENERATED);
            }
            ev.calls.push(record(r, c, format!("{} triple{}", triples.len(), plural_s(triples.len()))));
            // An empty JSON list says "none"; prose with no triple in it says nothing.
            if triples.is_empty() && c.json_reply.is_none() {
                unreadable(ev);
                ev.notes.push(format!("sample {} has no triple in the `(subject, relation, object)` form", i + 1));
            }
            for t in triples {
                if !self.samples.contains(&t) {
                    self.samples.push(t);
                }
            }
        }
        ev.summary =
            format!("the model generated {} distinct triple{}", self.samples.len(), plural_s(self.samples.len()));
        self.sample_kept = vec![true; self.samples.len()];
        self.verified_at = None;
        if self.samples.is_empty() {
            self.observe("No triple generated.".into());
        } else if requests.len() > 1 {
            self.phase = Phase::Verify;
        } else {
            ev.notes.push("one sample: nothing to verify against; the triples are kept unverified".into());
            self.after_generate(cx, ev);
        }

        Ok(())
    }

    /// On the verification of the generated triples.
    pub(super) fn on_verify(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        let mut fell_back = false;
        let kept = match parse::parse_kept(&c.text, self.samples.len()) {
            Ok(k) => k,
            Err(why) => {
                fell_back = true;
                ev.notes.push(format!("{why}; no generated triple is kept"));
                Vec::new()
            }
        };
        ev.calls.push(record(&requests[0], c, kept.iter().map(|k| (k + 1).to_string()).collect::<Vec<_>>().join(", ")));
        if fell_back {
            unreadable(ev);
        }
        ev.summary = format!(
            "verification kept {} of {} triple{}",
            kept.len(),
            self.samples.len(),
            plural_s(self.samples.len())
        );
        // Rejected ones stay too, marked, for the user to see (and overrule).
        self.sample_kept = (0..self.samples.len()).map(|i| kept.contains(&i)).collect();
        self.verified_at = Some(ev.index);
        self.after_generate(cx, ev);

        Ok(())
    }

    /// On the generated triples' names linked to the KG.
    pub(super) fn on_link_generated(
        &mut self,
        cx: &mut Context,
        plan: &GogPlan,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        for (i, name) in plan.names.iter().enumerate() {
            let matches = entity_matches(responses, i)?;
            ev.lookups.push(LookupRecord { what: format!("entities named {name:?}"), results: matches.len() });
            if let Some(m) = link_model_name(name, matches) {
                self.names.insert(name.to_lowercase(), Term::Entity(m.id.clone()));
            }
        }
        ev.summary = "linked the generated names".into();
        self.record_generated(cx, ev);

        Ok(())
    }
}
