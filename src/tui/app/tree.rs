//! The beam tree: its rows, the selection, search, and the overrides made on it (keep, drop, add a candidate).

use super::*;

/// The beam of `run` a node ref points into: the current one, or a branch set aside.
pub fn beam_in(run: &Run, node: NodeRef) -> Option<&Beam> {
    match node.branch {
        None => Some(run.beam()),
        Some(i) => run.abandoned().get(i).map(|a| &a.beam),
    }
}

impl App {
    /// The beam a node ref points into.
    pub fn beam_of(&self, node: NodeRef) -> Option<&Beam> {
        beam_in(self.run.as_ref()?, node)
    }

    pub fn node(&self, node: NodeRef) -> Option<&BeamNode> {
        self.beam_of(node)?.nodes.get(node.id)
    }

    /// The beam tree's rows as shown, depth first, collapsed subtrees hidden. Branches set
    /// aside by a rewind hang under the node they grew from, after the current children.
    pub fn visible_rows(&self) -> Vec<Row> {
        let Some(run) = &self.run else { return Vec::new() };
        let beam = run.beam();
        let abandoned: Vec<(usize, &crate::engine::Abandoned)> =
            run.abandoned().iter().enumerate().skip(self.abandoned_from).collect();
        let mut rows = Vec::with_capacity(beam.nodes.len());
        let mut stack: Vec<Row> =
            beam.roots().map(|r| Row { node: NodeRef { branch: None, id: r.id }, indent: 0 }).collect();
        stack.reverse();
        while let Some(row) = stack.pop() {
            rows.push(row);
            if self.collapsed.contains(&row.node) {
                continue;
            }
            let at = stack.len();
            let own = match row.node.branch {
                None => &beam.nodes[row.node.id].children,
                Some(b) => &run.abandoned()[b].beam.nodes[row.node.id].children,
            };
            let child = |id| Row { node: NodeRef { branch: row.node.branch, id }, indent: row.indent + 1 };
            match row.node.branch {
                // A shared node shows its current children, then each branch's own.
                None => {
                    stack.extend(own.iter().map(|&c| child(c)));
                    for (b, a) in &abandoned {
                        if let Some(n) = a.beam.nodes.get(row.node.id).filter(|_| row.node.id < a.shared) {
                            stack.extend(
                                n.children.iter().filter(|&&c| c >= a.shared).map(|&c| Row {
                                    node: NodeRef { branch: Some(*b), id: c },
                                    indent: row.indent + 1,
                                }),
                            );
                        }
                    }
                }
                Some(_) => stack.extend(own.iter().map(|&c| child(c))),
            }
            stack[at..].reverse();
        }
        rows
    }

    pub fn selected_ref(&self) -> Option<NodeRef> {
        self.visible_rows().get(self.selected).map(|r| r.node)
    }

    /// The selected node of the current beam (not of a branch set aside).
    pub fn selected_node(&self) -> Option<NodeId> {
        self.selected_ref().filter(|r| r.branch.is_none()).map(|r| r.id)
    }

    /// Unfolds the way to `node` and selects it.
    pub fn reveal(&mut self, node: NodeRef) {
        if let Some(beam) = self.beam_of(node) {
            let path = beam.path(node.id);
            for id in path {
                let shared = NodeRef { branch: None, id };
                self.collapsed.remove(&NodeRef { branch: node.branch, id });
                self.collapsed.remove(&shared);
            }
        }
        if let Some(i) = self.visible_rows().iter().position(|r| r.node == node) {
            self.selected = i;
            self.selection_moved = true;
        }
        self.focus = Focus::Tree;
    }

    /// The selected node of the current beam, or a message saying why there is none.
    pub(super) fn current_node(&mut self) -> Option<NodeId> {
        match self.selected_ref() {
            Some(NodeRef { branch: None, id }) => Some(id),
            Some(_) => {
                self.say("that branch was set aside: select a node of the current beam");
                None
            }
            None => None,
        }
    }

    pub(super) fn toggle_keep(&mut self) -> Vec<Effect> {
        let (Some(id), Some(run)) = (self.current_node(), &self.run) else { return Vec::new() };
        let live = run.beam().nodes[id].status.is_live();
        self.apply(if live { Override::Drop { node: id } } else { Override::Keep { node: id } })
    }

    /// Opens the picker of KG candidates the model never proposed for the selected node.
    pub(super) fn open_add(&mut self) -> Vec<Effect> {
        let (Some(id), Some(run)) = (self.current_node(), &self.run) else { return Vec::new() };
        let beam = run.beam();
        let node = &beam.nodes[id];
        let (purpose, request, title) = match &node.kind {
            NodeKind::Entity { term: Term::Entity(entity), .. } => (
                Purpose::Relation { parent: id },
                Request::Relations { entity: entity.clone() },
                format!(" Add a relation of {} ", node.shown()),
            ),
            NodeKind::Relation { relation, direction, shown } => {
                let Some(Term::Entity(head)) = node.parent.and_then(|p| beam.nodes[p].term()) else {
                    return Vec::new();
                };
                let relation =
                    crate::kg::RelationRef { relation: relation.clone(), direction: *direction, label: None };
                (
                    Purpose::Entity { parent: id },
                    Request::Neighbours { entity: head.clone(), relation },
                    format!(" Add an entity reached by {shown} "),
                )
            }
            _ => {
                self.say("a value has no relations to add");
                return Vec::new();
            }
        };
        let (token, lookup) = self.lookup(vec![request]);
        let mut picker = Picker::new(purpose, title);
        picker.expects = token;
        self.picker = Some(picker);
        vec![lookup]
    }

    /// Gives a lookup's answer to whoever waits for it (the open picker or the search); an
    /// answer nobody waits for any more is dropped.
    pub(super) fn looked(&mut self, token: u64, result: Result<Vec<Response>, String>) -> Vec<Effect> {
        if self.form_expects(token) && self.picker.is_none() {
            return self.name_checked(result);
        }
        let for_picker = self.picker.as_ref().is_some_and(|p| p.expects == token);
        let for_search = self.search.as_ref().is_some_and(|s| s.expects == token);
        match result {
            Ok(responses) if for_picker => self.fill_picker(responses),
            Ok(responses) if for_search => self.say_kg_matches(responses),
            Err(e) if for_picker => {
                self.picker = None;
                self.fail(format!("the KG lookup failed: {e}"));
            }
            Err(e) if for_search => self.fail(format!("the KG search failed: {e}")),
            Ok(_) => {}
            Err(e) => tracing::info!("a lookup nobody waits for any more failed: {e}"),
        }
        Vec::new()
    }

    /// The KG's labels matching the search: said, not kept (they are not in the beam to jump to).
    fn say_kg_matches(&mut self, responses: Vec<Response>) {
        let Some(search) = &self.search else { return };
        let status = if search.matches.is_empty() {
            format!("/{}: no node of the beam matches", search.query)
        } else {
            search_status(search)
        };
        if let Some(Response::Entities { matches }) = responses.into_iter().next() {
            if matches.is_empty() {
                self.say(format!("{status} · nor does any label in the KG"));
            } else {
                let names: Vec<String> = matches.iter().take(5).map(|m| format!("{} ({})", m.label, m.id)).collect();
                self.say(format!("{status} · in the KG: {}", names.join(", ")));
            }
        }
    }

    /// Fills the open picker with looked-up candidates.
    fn fill_picker(&mut self, responses: Vec<Response>) {
        let Some(picker) = self.picker.as_mut() else { return };
        picker.loading = false;
        picker.items = responses
            .into_iter()
            .flat_map(|r| match r {
                Response::Relations { relations } => relations
                    .into_iter()
                    .map(|r| PickItem {
                        // The id beside a label; alone, only its direction (not the id twice).
                        detail: match &r.label {
                            Some(_) => format!("{} {}", r.direction.arrow(), r.relation),
                            None => r.direction.arrow().to_string(),
                        },
                        text: r.label.clone().unwrap_or_else(|| r.relation.clone()),
                        value: PickValue::Relation(r),
                    })
                    .collect::<Vec<_>>(),
                Response::Neighbours { neighbours } => neighbours
                    .into_iter()
                    .map(|n| PickItem {
                        text: n.label.clone().unwrap_or_else(|| n.term.to_string()),
                        detail: n.term.to_string(),
                        value: PickValue::Term { term: n.term, label: n.label },
                    })
                    .collect(),
                Response::Entities { matches } => matches
                    .into_iter()
                    .map(|m| PickItem {
                        detail: m.id.clone(),
                        text: m.label.clone(),
                        value: PickValue::Term { term: Term::Entity(m.id), label: Some(m.label) },
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        // Say which candidates the tree already has (picking one of those keeps it); the ones
        // the model was never shown come first.
        if let (Purpose::Relation { parent } | Purpose::Entity { parent }, Some(run)) = (&picker.purpose, &self.run) {
            let beam = run.beam();
            let mut fresh = Vec::with_capacity(picker.items.len());
            let mut known = Vec::new();
            for mut item in std::mem::take(&mut picker.items) {
                match existing_child(beam, *parent, &item.value) {
                    Some(child) => {
                        let status = beam.nodes[child].status;
                        let then = if status.is_live() { "" } else { ": picking it asks to keep it" };
                        item.detail.push_str(&format!("  (in the tree, {}{then})", status.describe()));
                        known.push(item);
                    }
                    None => fresh.push(item),
                }
            }
            let new = fresh.len();
            fresh.extend(known);
            picker.items = fresh;
            picker.note = match new {
                0 => "· all in the tree: picking one asks to keep it ".into(),
                n => format!("· {n} not in the tree "),
            };
        }
        if picker.items.is_empty() {
            let empty = match picker.searched.as_deref() {
                Some(name) => format!("no label in the KG matches {name:?}"),
                None => "the KG has no candidates here".into(),
            };
            self.say(empty);
        }
    }

    pub(super) fn on_picker_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(picker) = &mut self.picker else { return Vec::new() };
        match Component::event(picker, key) {
            Outcome::Editing => self.object_query_changed(),
            Outcome::Cancelled => {
                self.picker = None;
                Vec::new()
            }
            Outcome::Submitted => {
                let purpose = picker.purpose.clone();
                let Some(item) = picker.chosen().cloned() else { return Vec::new() };
                self.picker = None;
                let existing = match (&purpose, &self.run) {
                    (Purpose::Relation { parent } | Purpose::Entity { parent }, Some(run)) => {
                        existing_child(run.beam(), *parent, &item.value)
                    }
                    _ => None,
                };
                if let Some(node) = existing {
                    let live = self.run.as_ref().is_some_and(|r| r.beam().nodes[node].status.is_live());
                    if live {
                        self.say(format!("{} is in the tree and kept already", item.text));
                        return Vec::new();
                    }
                    return self.apply(Override::Keep { node });
                }
                match (purpose, item.value) {
                    (Purpose::Relation { parent }, PickValue::Relation(relation)) => {
                        self.apply(Override::AddRelation { parent, relation })
                    }
                    (Purpose::Entity { parent }, PickValue::Term { term, label }) => {
                        self.apply(Override::AddEntity { parent, term, label })
                    }
                    (Purpose::Object, PickValue::Term { term, label }) => {
                        if let Some(form) = &mut self.form {
                            form.fields[1].value = label.unwrap_or_else(|| term.to_string());
                            if let FormKind::Flag { object, check, .. } = &mut form.kind {
                                *object = Some(term);
                                // Picked: no typed name waits for its lookup any more.
                                check.expects = 0;
                            }
                        }
                        Vec::new()
                    }
                    _ => Vec::new(),
                }
            }
        }
    }

    pub(super) fn search_update(&mut self) {
        let Some(run) = &self.run else { return };
        let Some(search) = &mut self.search else { return };
        let beam = run.beam();
        let texts: Vec<String> = beam
            .nodes
            .iter()
            .map(|n| match n.term() {
                Some(t) => format!("{} {t}", n.shown()),
                None => n.shown().to_string(),
            })
            .collect();
        search.matches = fuzzy_rank(&search.query, texts.iter().map(String::as_str));
        if search.query.trim().is_empty() {
            search.matches.clear();
        }
        search.current = 0;
    }

    pub(super) fn search_jump(&mut self, delta: isize) {
        let Some(search) = &mut self.search else { return };
        if search.matches.is_empty() {
            let query = search.query.clone();
            self.say(format!("no node matches {query:?}"));
            return;
        }
        let n = search.matches.len() as isize;
        search.current = (search.current as isize + delta).rem_euclid(n) as usize;
        let (id, status) = (search.matches[search.current], search_status(search));
        self.say(status);
        self.reveal(NodeRef { branch: None, id });
    }

    pub(super) fn on_search_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(search) = &mut self.search else { return Vec::new() };
        match key.code {
            KeyCode::Esc => {
                self.search = None;
                self.message = None;
            }
            KeyCode::Enter => {
                search.typing = false;
                let name = search.query.trim().to_string();
                self.search_jump(0);
                if !name.is_empty() && self.live {
                    let (token, lookup) = self.lookup(vec![Request::FindEntities { name, limit: 10 }]);
                    if let Some(search) = &mut self.search {
                        search.expects = token;
                    }
                    return vec![lookup];
                }
            }
            KeyCode::Backspace => {
                search.query.pop();
                self.search_update();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                search.query.push(c);
                self.search_update();
            }
            _ => {}
        }
        Vec::new()
    }
}

/// The child of `parent` that already stands for a picked candidate.
pub(super) fn existing_child(beam: &Beam, parent: NodeId, value: &PickValue) -> Option<NodeId> {
    beam.nodes.get(parent)?.children.iter().copied().find(|&c| match (&beam.nodes[c].kind, value) {
        (NodeKind::Relation { relation, direction, .. }, PickValue::Relation(r)) => {
            relation == &r.relation && direction == &r.direction
        }
        (NodeKind::Entity { term, .. }, PickValue::Term { term: t, .. }) => term == t,
        _ => false,
    })
}

/// While a search is on, `n` moves to the next match instead of stepping: said first and short,
/// so an 80-column status bar shows it even when the KG's labels are said after it (the query
/// was just typed; it is not repeated).
pub(super) fn search_status(search: &Search) -> String {
    format!("match {}/{} · n/N: next · esc: end", search.current + 1, search.matches.len())
}
