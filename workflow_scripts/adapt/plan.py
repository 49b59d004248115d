"""Planning of the adapt stage: its recipes (registered as models before the probes plan) and the
input functions of rules/adapt.smk."""
from __future__ import annotations

from workflow_scripts.adapt import models as adapt_models
from workflow_scripts.study import ProbePlan


class AdaptPlan(ProbePlan):
    def plan_pairs(self) -> list:
        return []  # a stage: no model runs it

    def planned_datasets(self) -> list[str]:
        return []

    @property
    def recipes(self) -> list[str]:
        return adapt_models.order(self.config)

    def train_plan(self, wildcards) -> dict:
        """What the recipe's training computes from: a param, so any change to the recipe, its base or
        its data retrains it."""
        return adapt_models.plan(self.config, wildcards.recipe, self.R)

    def inputs(self, wildcards) -> dict:
        return adapt_models.inputs(self.config, wildcards.recipe, self.R)

    def targets(self) -> list[str]:
        return [f"{self.R}/models/{r}" for r in self.recipes]  # adapted models, even one no probe scores
