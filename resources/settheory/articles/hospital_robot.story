Surgeons at St Aldric's Hospital have carried out their first operation with a surgical robot.

The patient, a 64-year-old man, had a tumour removed from his kidney.

He was able to go home two days later, instead of the usual week.

The robot lets surgeons work through small cuts, which reduces pain and blood loss.

It cost the hospital 1.5 million pounds, raised partly by a local charity.

Doctors plan to use it for about three hundred operations a year.

Nurses and surgeons trained for six months before the first procedure.

The hospital says waiting lists for kidney surgery should fall as a result.

@highlight

St Aldric's Hospital performs first robot-assisted operation

@highlight

The patient went home after two days
