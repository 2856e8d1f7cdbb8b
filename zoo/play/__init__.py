"""Interactive games over the engine and simulator, played with any :class:`~zoo.grounded.Grounded` model.

``zoo play light``: a LIGHT room you talk and act in, with a model-driven partner
(:mod:`~zoo.play.light_room` stages the room, :mod:`~zoo.play.light_partner` decides what the
partner says, does and emotes, :mod:`~zoo.play.retrieval_index` keeps the utterances it
retrieves from, :mod:`~zoo.play.light_game` runs the turns). ``zoo play blocks``: a Blocks
board you instruct (:mod:`~zoo.play.blocks_board`, :mod:`~zoo.play.blocks_game`). Both read
lines from a person or a script (:mod:`~zoo.play.terminal_text`) and can write every turn to a JSONL
transcript (:mod:`~zoo.play.transcript`). This package sits above the models and the domains:
it may import both; neither imports it.
"""
